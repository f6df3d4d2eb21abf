/* SPDX-License-Identifier: MIT */
/* ascend-sim (sched/sim): trace parsing, the two engines, faults, figures. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched_fixture.h"
#include "sim.h"
#include "test_chaos.h"

static void trace_ok(const char *csv, struct sim_trace *t)
{
	char err[SIM_ERR_MAX] = "";
	int r = sim_trace_parse(csv, strlen(csv), "trace.csv", t, err);

	if (r < 0)
		fail_msg("trace refused: %s", err);
}

static struct conf_cluster *conf_of(const struct fx_opts *o)
{
	struct conf_cluster *conf = NULL;
	struct conf_error err;
	char *yaml = fx_cluster_yaml(o), msg[1024];

	memset(&err, 0, sizeof(err));
	if (conf_cluster_parse(yaml, strlen(yaml), "fixture.yaml", &conf, &err) < 0)
		fail_msg("%s", conf_error_format(&err, msg, sizeof(msg)));
	free(yaml);
	return conf;
}

/* Both replays of @t (fitted to the cluster first) on the cluster of @fo. */
static void run_both(struct sim_trace *t, const struct fx_opts *fo, const struct sim_options *o,
		     struct sim_result *st, struct sim_result *as)
{
	struct sched_cluster *view = NULL;
	char err[SIM_ERR_MAX] = "";
	size_t raised, removed;

	assert_int_equal(sched_cluster_new(conf_of(fo), &view), 0);
	assert_int_equal(sim_trace_fit(t, view, &raised, &removed), 0);
	if (sim_run_static(t, view, o, st, err) < 0)
		fail_msg("static replay: %s", err);
	if (sim_run_ascendfs(t, conf_of(fo), o, as, err) < 0)
		fail_msg("ascendfs replay: %s", err);
	sched_cluster_free(view);
}

/* ---- traces ---- */

static void test_trace_philly_sorts_and_maps(void **state)
{
	struct sim_trace t;

	(void)state;
	trace_ok("timestamp,duration,num_gpus,gpu_time,cluster\n"
		 "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
		 "2017-10-09 06:13:03,2951.4,16,47222.4,6214E9\n"
		 "2017-10-09 06:13:03,0.2,2,0.4,11cb48\n",
		 &t);
	assert_int_equal(t.format, SIM_TRACE_PHILLY);
	assert_int_equal(t.n, 3);
	/* by submit time, then file order; times from the first arrival */
	assert_int_equal(t.jobs[0].line, 3);
	assert_int_equal(t.jobs[0].submit_sec, 0);
	assert_int_equal(t.jobs[0].dur_sec, 2951);
	assert_int_equal(t.jobs[0].npus, 16);
	assert_string_equal(t.queues[t.jobs[0].queue], "vc-6214e9");
	assert_int_equal(t.jobs[1].line, 4);
	assert_int_equal(t.jobs[1].dur_sec, 1); /* a job runs at least 1 s */
	assert_int_equal(t.jobs[2].submit_sec, 48 * 60 + 52);
	assert_int_equal(t.jobs[2].priority, 500);
	assert_string_equal(t.queues[t.jobs[2].queue], "vc-11cb48");
	assert_int_equal(t.nqueue, 2);
	assert_int_equal(t.origin_sec, 1507529583); /* 2017-10-09 06:13:03 UTC */
	sim_trace_free(&t);
}

static void test_trace_plain_defaults(void **state)
{
	struct sim_trace t;

	(void)state;
	trace_ok("submit_sec,duration_sec,npus,queue,priority\r\n"
		 "\r\n"
		 "100,3600,8,,\r\n"
		 "40,60,1,research,900\r\n",
		 &t);
	assert_int_equal(t.format, SIM_TRACE_PLAIN);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.jobs[0].submit_sec, 0);
	assert_string_equal(t.queues[t.jobs[0].queue], "research");
	assert_int_equal(t.jobs[0].priority, 900);
	assert_int_equal(t.jobs[1].submit_sec, 60);
	assert_string_equal(t.queues[t.jobs[1].queue], "default");
	assert_int_equal(t.jobs[1].priority, 500);
	sim_trace_free(&t);
}

/* A CSV trace and the message its parse must fail with (-EINVAL). */
struct trace_error_case {
	const char *csv, *want;
};

static void expect_trace_errors(const struct trace_error_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sim_trace t = { 0 };
		char err[SIM_ERR_MAX] = "";
		int r = sim_trace_parse(cases[i].csv, strlen(cases[i].csv), "trace.csv", &t, err);

		if (r != -EINVAL || !strstr(err, cases[i].want))
			fail_msg("case %zu: got %d '%s', want -EINVAL '%s'", i, r, err,
				 cases[i].want);
		assert_null(t.jobs);
	}
}

static void test_trace_errors_say_where(void **state)
{
	static const struct trace_error_case cases[] = {
		{ "", "trace.csv:1: empty trace" },
		{ "job,npus\n1,2\n", "trace.csv:1: unknown trace format" },
		{ "submit_sec,duration_sec,npus,queue,priority\n", "trace.csv:1: the trace has a "
								   "header but no job rows" },
		{ "submit_sec,duration_sec,npus,queue,priority\n0,10,0,,\n",
		  "trace.csv:2: npus: '0' is not a whole number from 1 to 65536" },
		{ "submit_sec,duration_sec,npus,queue,priority\n0,10,8,,\n0,x,8,,\n",
		  "trace.csv:3: duration_sec: 'x' is not a number of seconds" },
		{ "submit_sec,duration_sec,npus,queue,priority\n-5,10,8,,\n",
		  "trace.csv:2: submit_sec: '-5' is not a whole number of seconds" },
		{ "submit_sec,duration_sec,npus,queue,priority\n0,10,8,Big Queue,\n",
		  "trace.csv:2: queue: 'Big Queue' is not a queue name" },
		{ "submit_sec,duration_sec,npus,queue,priority\n0,10,8,,1001\n",
		  "trace.csv:2: priority: '1001' is not a whole number from 0 to 1000" },
		{ "submit_sec,duration_sec,npus,queue,priority\n0,10,8\n",
		  "trace.csv:2: expected 5 fields" },
		{ "submit_sec,duration_sec,npus,queue,priority\n0,10,8,,,,,,,,\n",
		  "trace.csv:2: more than 8 fields" },
		{ "timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-40 07:01:55,66.0,1,66,ab\n",
		  "trace.csv:2: timestamp: '2017-13-40 07:01:55' is not a time" },
		{ "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66,xyz\n",
		  "trace.csv:2: cluster: 'xyz' is not a virtual cluster hash" },
		{ "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,-1,1,66,ab\n",
		  "trace.csv:2: duration: '-1' is not a number of seconds" },
		{ "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,nan,1,66,ab\n",
		  "trace.csv:2: duration: 'nan'" },
	};

	(void)state;
	expect_trace_errors(cases, sizeof(cases) / sizeof(cases[0]));
	{
		static const char nul[] = "submit_sec,duration_sec,npus,queue,priority\n0,1\0,8,,\n";
		struct sim_trace t = { 0 };
		char err[SIM_ERR_MAX] = "";

		assert_int_equal(sim_trace_parse(nul, sizeof(nul) - 1, "trace.csv", &t, err), -EINVAL);
		assert_non_null(strstr(err, "trace.csv:2: binary data"));
	}
}

static void test_trace_slice_and_scale(void **state)
{
	struct sim_trace t;
	char err[SIM_ERR_MAX] = "";

	(void)state;
	trace_ok("submit_sec,duration_sec,npus,queue,priority\n"
		 "0,10,1,,\n100,10,1,,\n300,10,1,,\n700,10,1,,\n",
		 &t);
	assert_int_equal(sim_trace_slice(&t, 1, 3, err), 0);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.jobs[0].submit_sec, 0);
	assert_int_equal(t.jobs[1].submit_sec, 200);
	assert_int_equal(t.origin_sec, 100);
	assert_int_equal(sim_trace_scale_load(&t, 4), 0);
	assert_int_equal(t.jobs[1].submit_sec, 50);
	assert_int_equal(t.jobs[1].dur_sec, 10); /* run times stay */
	assert_int_equal(sim_trace_scale_load(&t, 0), -EINVAL);
	assert_int_equal(sim_trace_slice(&t, 5, 9, err), -EINVAL);
	assert_non_null(strstr(err, "keeps no job"));
	assert_int_equal(t.n, 2); /* a refused slice changes nothing */
	sim_trace_free(&t);
}

#ifdef TEST_CHAOS
static int chaos_parse(void)
{
	static const char csv[] = "timestamp,duration,num_gpus,gpu_time,cluster\n"
				  "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
				  "2017-10-09 06:13:03,2951.0,8,2951.0,6214e9\n"
				  "2017-10-09 06:14:03,51.0,2,2951.0,aaaaaa\n";
	struct sim_trace t = { 0 };
	char err[SIM_ERR_MAX];
	int r = sim_trace_parse(csv, sizeof(csv) - 1, "chaos.csv", &t, err);

	if (r == 0) {
		assert_int_equal(t.n, 3);
		sim_trace_free(&t);
	} else
		assert_null(t.jobs);
	return r;
}
#endif

static void test_trace_parse_survives_allocation_failures(void **state)
{
	(void)state;
#ifdef TEST_CHAOS
	for (long n = 0;; n++) {
		long live = chaos_live;
		int r;

		chaos_injected = false;
		chaos_countdown = n;
		r = chaos_parse();
		chaos_countdown = -1;
		assert_int_equal(chaos_live, live);
		if (!chaos_injected) {
			assert_int_equal(r, 0);
			assert_true(n > 2);
			break;
		}
		assert_int_equal(r, -ENOMEM);
	}
#else
	print_message("allocation failures not injected in this build (sanitizer allocator)\n");
#endif
}

static void test_fit_raises_and_removes(void **state)
{
	struct fx_opts fo = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&fo);
	struct sim_trace t;
	size_t raised, removed;

	(void)state;
	trace_ok("submit_sec,duration_sec,npus,queue,priority\n"
		 "0,10,12,,\n1,10,3,,\n2,10,17,,\n3,10,16,,\n",
		 &t);
	assert_int_equal(sim_trace_fit(&t, c, &raised, &removed), 0);
	assert_int_equal(raised, 1);
	assert_int_equal(removed, 1);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.jobs[0].npus, 16); /* two whole servers */
	assert_int_equal(t.jobs[1].npus, 3);  /* 910B: any 1-8 on one server */
	assert_int_equal(t.jobs[2].npus, 16);
	assert_int_equal(t.jobs[2].line, 5);
	sim_trace_free(&t);
	sched_cluster_free(c);
}

/* The plain format's optional layout columns, in any order, each may be empty. */
static void test_trace_layout_columns(void **state)
{
	struct sim_options o;
	struct sched_parallel par;
	struct sim_trace t;

	(void)state;
	sim_options_default(&o);
	trace_ok("submit_sec,duration_sec,npus,queue,priority,model,tp,pp,ep,cp\n"
		 "0,60,32,,,llama70b,8,4,,\n"
		 "1,60,32,,,moe,2,2,8,\n"
		 "2,60,4,,,,,,,\n",
		 &t);
	assert_int_equal(t.jobs[0].model, sim_model_find("llama70b"));
	assert_int_equal(t.jobs[0].tp, 8);
	assert_int_equal(t.jobs[0].pp, 4);
	assert_int_equal(t.jobs[0].ep, 0);
	assert_int_equal(t.jobs[1].model, sim_model_find("moe"));
	assert_int_equal(t.jobs[1].ep, 8);
	assert_int_equal(sim_tjob_unit(&t.jobs[1]), 32);
	assert_int_equal(t.jobs[2].model, 0);
	assert_string_equal(sim_model_name(0), "dense");
	/* the layouts: given sizes, dp the rest; tp by --tp when not given */
	assert_int_equal(sim_model_layout(&t.jobs[0], 32, &o, &par), 0);
	assert_int_equal(par.size[SCHED_DIM_DP], 1);
	assert_int_equal(sim_model_layout(&t.jobs[1], 32, &o, &par), 0);
	assert_int_equal(par.size[SCHED_DIM_TP], 2);
	assert_int_equal(par.size[SCHED_DIM_DP], 8);
	assert_int_equal(sim_model_layout(&t.jobs[2], 4, &o, &par), 0);
	assert_int_equal(par.size[SCHED_DIM_TP], 4);
	assert_int_equal(sim_model_layout(&t.jobs[2], 16, &o, &par), 0);
	assert_int_equal(par.size[SCHED_DIM_TP], 8);
	assert_int_equal(par.size[SCHED_DIM_DP], 2);
	o.tp = 3;
	assert_int_equal(sim_model_layout(&t.jobs[2], 16, &o, &par), 0);
	assert_int_equal(par.size[SCHED_DIM_TP], 2); /* the largest of at most 3 dividing 16 */
	sim_trace_free(&t);
}

static void test_trace_layout_errors_say_where(void **state)
{
	static const struct trace_error_case cases[] = {
		{ "submit_sec,duration_sec,npus,queue,priority,tp,tp\n0,10,8,,,1,1\n",
		  "trace.csv:1: unknown trace format" },
		{ "submit_sec,duration_sec,npus,queue,priority,dp\n0,10,8,,,1\n",
		  "trace.csv:1: unknown trace format" },
		{ "submit_sec,duration_sec,npus,queue,priority,tp\n0,10,8,,\n",
		  "trace.csv:2: expected 6 fields, as the header has, found 5" },
		{ "submit_sec,duration_sec,npus,queue,priority,tp\n0,10,8,,,16\n",
		  "trace.csv:2: tp: '16' is not a whole number from 1 to npus (8)" },
		{ "submit_sec,duration_sec,npus,queue,priority,pp\n0,10,8,,,0\n",
		  "trace.csv:2: pp: '0' is not a whole number" },
		{ "submit_sec,duration_sec,npus,queue,priority,tp,ep\n0,10,8,,,8,\n0,10,8,,,4,4\n",
		  "trace.csv:3: tp x pp x cp x ep = 16 does not divide npus (8)" },
		{ "submit_sec,duration_sec,npus,queue,priority,model\n0,10,8,,,gpt5\n",
		  "trace.csv:2: model: 'gpt5' is not a model preset (llama70b, moe)" },
		{ "submit_sec,duration_sec,npus,queue,priority,tp,pp,ep,cp,model\n"
		  "0,10,8,,,,,,,,,\n",
		  "trace.csv:2: more than 10 fields" },
	};

	(void)state;
	expect_trace_errors(cases, sizeof(cases) / sizeof(cases[0]));
}

/* A raised size stays a multiple of the layout: 6 NPUs of tp 4 become 8, 12 of pp 3 24. */
static void test_fit_keeps_the_layout(void **state)
{
	struct fx_opts fo = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&fo);
	struct sim_trace t;
	size_t raised, removed;

	(void)state;
	trace_ok("submit_sec,duration_sec,npus,queue,priority,tp,pp\n"
		 "0,10,6,,,2,3\n1,10,3,,,,3\n2,10,12,,,,3\n3,10,5,,,5,\n",
		 &t);
	assert_int_equal(sim_trace_fit(&t, c, &raised, &removed), 0);
	assert_int_equal(t.jobs[0].npus, 6);
	assert_int_equal(t.jobs[1].npus, 3);
	assert_int_equal(t.jobs[2].npus, 24); /* 16 is legal but not a multiple of 3 */
	assert_int_equal(t.jobs[3].npus, 5);
	assert_int_equal(raised, 1);
	assert_int_equal(removed, 0);
	sim_trace_free(&t);
	sched_cluster_free(c);
}

/* The step shape: Llama 2 70B on TP8 x PP4 and the compute time from 6 x P x tokens. */
static void test_model_compute_time(void **state)
{
	struct sim_tjob j = { .npus = 32, .tp = 8, .pp = 4 };
	struct sched_train_model m;
	struct sched_parallel par;
	struct sim_options o;

	(void)state;
	sim_options_default(&o);
	j.model = (unsigned)sim_model_find("llama70b");
	assert_int_equal(sim_model_layout(&j, 32, &o, &par), 0);
	sim_model_train(&j, &par, &o, &m);
	assert_int_equal(m.layers, 80);
	assert_int_equal(m.hidden, 8192);
	assert_int_equal(m.micro_batches, 16);
	/* 6 x 70e9 x (16 x 4096 tokens) / (32 x 320e12 x 0.4) s */
	assert_true(fabs(m.compute_usec - 6 * 70e9 * 16 * 4096 / (32 * 320e12 * 0.4) * 1e6) < 1);
	/* MoE: only the active parameters compute */
	j = (struct sim_tjob){ .npus = 32, .tp = 2, .pp = 2, .ep = 8 };
	j.model = (unsigned)sim_model_find("moe");
	assert_int_equal(sim_model_layout(&j, 32, &o, &par), 0);
	sim_model_train(&j, &par, &o, &m);
	assert_int_equal(m.moe_layers, 32);
	assert_int_equal(m.top_k, 2);
	assert_true(m.expert_params > 45e9 && m.params > m.expert_params);
	/* the default dense model grows with the job */
	j = (struct sim_tjob){ .npus = 8 };
	assert_int_equal(sim_model_layout(&j, 8, &o, &par), 0);
	sim_model_train(&j, &par, &o, &m);
	assert_true(m.params == 8e9 && m.layers == 32 && m.hidden == 4608);
}

/* ---- the engines ---- */

/*
 * With whole-server jobs, one queue, no backfill and no faults the two engines must
 * agree on every start: both are FIFO on the count of free servers. A cross-check of
 * the baseline against the scheduler it is compared with.
 */
static void test_static_matches_sched_fifo(void **state)
{
	struct fx_opts fo = { .servers = 8, .switches = 2, .no_backfill = true,
			      .no_preemption = true };
	struct sim_result st, as;
	struct sim_options o;
	struct sim_trace t;
	uint64_t rng = 0x51a7e5eedull, at = 0;
	char *csv = NULL;
	size_t len = 0, started = 0;
	FILE *f = open_memstream(&csv, &len);

	(void)state;
	fprintf(f, "submit_sec,duration_sec,npus,queue,priority\n");
	for (int i = 0; i < 300; i++) {
		static const unsigned sizes[] = { 8, 8, 16, 16, 24, 32, 64 };

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		at += (rng >> 33) % 1800;
		/* one priority: sched serves higher priorities first, the static line not */
		fprintf(f, "%llu,%llu,%u,,\n", (unsigned long long)at,
			(unsigned long long)(60 + (rng >> 20) % 20000), sizes[(rng >> 40) % 7]);
	}
	assert_int_equal(fclose(f), 0);
	trace_ok(csv, &t);
	free(csv);
	sim_options_default(&o);
	run_both(&t, &fo, &o, &st, &as);
	for (size_t i = 0; i < t.n; i++) {
		if (st.jobs[i].first_start_sec != as.jobs[i].first_start_sec)
			fail_msg("job %zu (%u NPUs, submitted at %llu s): static starts at %llu s, "
				 "sched at %llu s",
				 i, t.jobs[i].npus, (unsigned long long)t.jobs[i].submit_sec,
				 (unsigned long long)st.jobs[i].first_start_sec,
				 (unsigned long long)as.jobs[i].first_start_sec);
		assert_int_equal(st.jobs[i].outcome, SIM_DONE);
		assert_int_equal(as.jobs[i].outcome, SIM_DONE);
		started += as.jobs[i].first_start_sec > t.jobs[i].submit_sec;
	}
	assert_true(started > 50); /* the line really formed */
	assert_int_equal(as.backfilled, 0);
	sim_result_free(&st);
	sim_result_free(&as);
	sim_trace_free(&t);
}

/*
 * Six jobs on 4 servers with faults of fault sequence @seed (32 NPUs: a fault every ~9 h),
 * a checkpoint every 30 min and a 2 min restart, into @t and @o.
 */
static void faulty_replay(uint64_t seed, struct sim_trace *t, struct sim_options *o)
{
	trace_ok("submit_sec,duration_sec,npus,queue,priority\n"
		 "0,72000,8,,\n0,36000,16,,\n600,18000,4,,\n700,18000,4,,\n"
		 "900,7200,2,,\n1000,50000,8,,\n",
		 t);
	sim_options_default(o);
	o->seed = seed;
	o->mtbf_sec = 300 * 3600;
	o->repair_sec = 3600;
	o->checkpoint_sec = 1800;
	o->restart_cost_sec = 120;
}

/*
 * Faults: whatever the seed, a job hit by a fault resumes from its newest checkpoint
 * (as sched hands it over in resume_path), so no interruption loses more than one
 * checkpoint interval plus the restart cost; the static workflow restarts from scratch.
 */
static void test_faults_lose_at_most_a_checkpoint_interval(void **state)
{
	struct fx_opts fo = { .servers = 4, .switches = 2 };
	uint64_t hits = 0, st_lost = 0, as_lost = 0, st_over = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct sim_result st, as;
		struct sim_options o;
		struct sim_trace t;

		faulty_replay(seed, &t, &o);
		run_both(&t, &fo, &o, &st, &as);
		assert_int_equal(as.interruptions_over_bound, 0);
		assert_true(as.worst_loss_ratio <= 1.0);
		for (size_t i = 0; i < t.n; i++) {
			const struct sim_jobrec *j = &as.jobs[i];

			assert_int_equal(j->outcome, SIM_DONE);
			assert_int_equal(st.jobs[i].outcome, SIM_DONE);
			/* each restart redid at most one interval and paid the restart cost */
			assert_true(j->lost_fault_npu_sec <=
				    (double)j->fault_restarts * j->npus * (1800 + 120) + 1e-6);
			if (j->fault_restarts)
				assert_true(j->lost_fault_npu_sec > 0);
		}
		hits += as.faults_hit;
		as_lost += (uint64_t)(as.jobs[0].lost_fault_npu_sec + as.jobs[5].lost_fault_npu_sec);
		st_lost += (uint64_t)(st.jobs[0].lost_fault_npu_sec + st.jobs[5].lost_fault_npu_sec);
		st_over += st.interruptions_over_bound;
		assert_true(as.faults >= as.faults_hit + as.faults_absorbed);
		sim_result_free(&st);
		sim_result_free(&as);
		sim_trace_free(&t);
	}
	assert_true(hits >= 5);	     /* the seeds really exercised recovery */
	assert_true(st_over > 0);    /* from scratch: long jobs lose more than an interval */
	assert_true(st_lost > as_lost);
}

/*
 * --recovery dump: each fault loses at most the step in flight (and pays the save on
 * top of the restart cost), far less than job-level on the same fault sequence.
 */
static void test_faults_with_dump_lose_at_most_a_step(void **state)
{
	struct fx_opts fo = { .servers = 4, .switches = 2 };
	double job_lost = 0, dump_lost = 0;
	uint64_t hits = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct sim_result st, as, st2, dump;
		struct sim_options o;
		struct sim_trace t;

		faulty_replay(seed, &t, &o);
		run_both(&t, &fo, &o, &st, &as);
		o.dump = true;
		o.step_sec = 5;
		o.dump_save_sec = 10;
		run_both(&t, &fo, &o, &st2, &dump);
		for (size_t i = 0; i < t.n; i++) {
			const struct sim_jobrec *j = &dump.jobs[i];

			assert_int_equal(j->outcome, SIM_DONE);
			/* a step in flight and the restart (with the save) per fault, no more */
			assert_true(j->lost_fault_npu_sec <=
				    (double)j->fault_restarts * j->npus * (5 + 120 + 10) + 1e-6);
			job_lost += as.jobs[i].lost_fault_npu_sec;
			dump_lost += j->lost_fault_npu_sec;
		}
		hits += dump.faults_hit;
		sim_result_free(&st);
		sim_result_free(&as);
		sim_result_free(&st2);
		sim_result_free(&dump);
		sim_trace_free(&t);
	}
	assert_true(hits >= 5);
	print_message("# NPU-seconds lost to faults over 12 seeds: job-level %.0f, dump %.0f\n",
		      job_lost, dump_lost);
	assert_true(dump_lost * 4 < job_lost);
}

/*
 * --recovery process: a fault of the 2-server job replaced at once costs the rebuild
 * (30 s) instead of the restart and the save (120 + 10 s); the others are dumps. Each
 * fault still loses at most the step in flight and the dearer of the two costs, and
 * the replay handles some of them at process level.
 */
static void test_faults_with_process_level_pay_the_rebuild(void **state)
{
	struct fx_opts fo = { .servers = 6, .switches = 2 }; /* a spare for the 2-server job */
	double dump_lost = 0, process_lost = 0;
	uint64_t process_level = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct sim_result st, dump, st2, proc;
		struct sim_options o;
		struct sim_trace t;

		faulty_replay(seed, &t, &o);
		o.dump = true;
		run_both(&t, &fo, &o, &st, &dump);
		o.dump = false;
		o.process = true;
		o.rebuild_sec = 30;
		run_both(&t, &fo, &o, &st2, &proc);
		assert_int_equal(st2.process_recoveries, 0); /* the static workflow has none */
		for (size_t i = 0; i < t.n; i++) {
			const struct sim_jobrec *j = &proc.jobs[i];

			assert_int_equal(j->outcome, SIM_DONE);
			assert_true(j->lost_fault_npu_sec <=
				    (double)j->fault_restarts * j->npus * (5 + 120 + 10) + 1e-6);
			/* a single-server job is never handled at process level */
			dump_lost += dump.jobs[i].lost_fault_npu_sec;
			process_lost += j->lost_fault_npu_sec;
		}
		assert_true(proc.process_recoveries <= proc.faults_hit);
		process_level += proc.process_recoveries;
		sim_result_free(&st);
		sim_result_free(&dump);
		sim_result_free(&st2);
		sim_result_free(&proc);
		sim_trace_free(&t);
	}
	print_message("# NPU-seconds lost to faults over 12 seeds: dump %.0f, process %.0f "
		      "(%llu process-level recoveries)\n", dump_lost, process_lost,
		      (unsigned long long)process_level);
	assert_true(process_level > 0);
	assert_true(process_lost < dump_lost);
}

/*
 * --recovery retry: a transient fault of a running job (here all of them) costs it the
 * step in flight (work redone) and the retry's pause, nothing else: no restart, so its
 * jobs run for less time in all than dump's, which restart (5 min) after each fault of
 * the same sequence. The static workflow has no retry.
 */
static void test_transient_faults_are_retried(void **state)
{
	struct fx_opts fo = { .servers = 4, .switches = 2 };
	double dump_run = 0, retry_run = 0;
	uint64_t retried = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct sim_result st, dump, st2, rt;
		struct sim_options o;
		struct sim_trace t;

		faulty_replay(seed, &t, &o);
		o.restart_cost_sec = 300;
		o.dump = true;
		run_both(&t, &fo, &o, &st, &dump);
		o.dump = false;
		o.process = o.retry = true;
		o.transient_share = 1;
		o.retry_sec = 10;
		run_both(&t, &fo, &o, &st2, &rt);
		assert_int_equal(st2.retries, 0);
		assert_int_equal(st2.faults_hit, st.faults_hit); /* the same sequence */
		assert_int_equal(rt.retries, rt.faults_hit);
		for (size_t i = 0; i < t.n; i++) {
			const struct sim_jobrec *j = &rt.jobs[i];

			assert_int_equal(j->outcome, SIM_DONE);
			assert_int_equal(j->fault_restarts, 0);
			/* the step, once per fault that hit it */
			assert_true(j->lost_fault_npu_sec <= (double)rt.retries * j->npus * 5 + 1e-6);
			dump_run += (double)dump.jobs[i].run_total_sec * dump.jobs[i].npus;
			retry_run += (double)j->run_total_sec * j->npus;
		}
		retried += rt.retries;
		sim_result_free(&st);
		sim_result_free(&dump);
		sim_result_free(&st2);
		sim_result_free(&rt);
		sim_trace_free(&t);
	}
	print_message("# NPU-seconds run over 12 seeds: dump %.0f, retry %.0f (%llu retries)\n",
		      dump_run, retry_run, (unsigned long long)retried);
	assert_true(retried >= 5);
	assert_true(retry_run < dump_run);
}

/*
 * Preemption: a low-priority job that fills the server is preempted by an urgent one;
 * it loses only the work since its last checkpoint, and when it runs again it resumes
 * from there: its end is the urgent job's end plus exactly the work it had left.
 */
static void test_preempted_job_resumes_from_its_checkpoint(void **state)
{
	struct fx_opts fo = { .servers = 1 };
	struct sim_result st, as;
	struct sim_options o;
	struct sim_trace t;

	(void)state;
	trace_ok("submit_sec,duration_sec,npus,queue,priority\n"
		 "0,36000,8,,100\n"
		 "11400,3600,8,,900\n",
		 &t);
	sim_options_default(&o);
	o.checkpoint_sec = 3600;
	run_both(&t, &fo, &o, &st, &as);
	/* ascendfs: preempted at 3 h 10 min, 10 min since its checkpoint at 3 h */
	assert_int_equal(as.jobs[0].preemptions, 1);
	assert_int_equal(as.preemptions, 1);
	assert_true(as.jobs[0].lost_preempt_npu_sec == 600.0 * 8);
	assert_true(as.jobs[1].first_start_sec > 11400);
	assert_true(as.jobs[1].first_start_sec < 11400 + 300); /* the stop's grace */
	assert_int_equal(as.jobs[0].end_sec, as.jobs[1].end_sec + (36000 - 3 * 3600));
	assert_int_equal(as.jobs[0].outcome, SIM_DONE);
	assert_int_equal(as.interruptions_over_bound, 0);
	/* static: the urgent job waits for the whole 10 h job */
	assert_int_equal(st.jobs[1].first_start_sec, 36000);
	assert_int_equal(st.jobs[0].preemptions, 0);
	sim_result_free(&st);
	sim_result_free(&as);
	sim_trace_free(&t);
}

/* Small jobs share servers under ascendfs; the static workflow gives each a server. */
static void test_small_jobs_share_servers(void **state)
{
	struct fx_opts fo = { .servers = 2 };
	struct sim_result st, as;
	struct sim_summary ss, sa;
	struct sim_options o;
	struct sim_trace t;

	(void)state;
	trace_ok("submit_sec,duration_sec,npus,queue,priority\n"
		 "0,3600,2,,\n0,3600,2,,\n0,3600,2,,\n0,3600,2,,\n0,3600,2,,\n0,3600,2,,\n",
		 &t);
	sim_options_default(&o);
	run_both(&t, &fo, &o, &st, &as);
	for (size_t i = 0; i < t.n; i++)
		assert_int_equal(as.jobs[i].first_start_sec, 0);
	/* static: two at a time, one per server */
	assert_int_equal(st.jobs[5].first_start_sec, 2 * 3600);
	assert_int_equal(sim_summarize(&t, &st, &ss), 0);
	assert_int_equal(sim_summarize(&t, &as, &sa), 0);
	assert_true(sa.wait_mean == 0);
	assert_true(ss.wait_mean == 3600); /* 0, 0, 1 h, 1 h, 2 h, 2 h */
	assert_true(sa.makespan_sec == 3600);
	assert_true(ss.makespan_sec == 3 * 3600);
	/* while jobs waited, static held both servers but ran 4 of 16 NPUs */
	assert_true(ss.alloc_wait_pct == 100.0);
	assert_true(ss.used_wait_pct == 25.0);
	sim_result_free(&st);
	sim_result_free(&as);
	sim_trace_free(&t);
}

static void test_same_seed_same_replay(void **state)
{
	struct fx_opts fo = { .servers = 4, .switches = 2 };
	struct sim_result a1, s1, a2, s2, a3, s3;
	struct sim_options o;
	struct sim_trace t;
	static const char csv[] = "submit_sec,duration_sec,npus,queue,priority\n"
				  "0,90000,8,,\n10,90000,16,,\n20,40000,4,,\n";

	(void)state;
	sim_options_default(&o);
	o.mtbf_sec = 100 * 3600;
	trace_ok(csv, &t);
	run_both(&t, &fo, &o, &s1, &a1);
	sim_trace_free(&t);
	trace_ok(csv, &t);
	run_both(&t, &fo, &o, &s2, &a2);
	sim_trace_free(&t);
	o.seed = 2;
	trace_ok(csv, &t);
	run_both(&t, &fo, &o, &s3, &a3);
	assert_true(a1.faults > 0);
	assert_int_equal(a1.faults, a2.faults);
	assert_int_equal(a1.faults_hit, a2.faults_hit);
	assert_int_equal(s1.faults_hit, s2.faults_hit);
	for (size_t i = 0; i < t.n; i++) {
		assert_int_equal(a1.jobs[i].end_sec, a2.jobs[i].end_sec);
		assert_int_equal(s1.jobs[i].end_sec, s2.jobs[i].end_sec);
	}
	assert_true(a1.faults != a3.faults || a1.jobs[0].end_sec != a3.jobs[0].end_sec ||
		    a1.jobs[1].end_sec != a3.jobs[1].end_sec);
	sim_result_free(&a1);
	sim_result_free(&s1);
	sim_result_free(&a2);
	sim_result_free(&s2);
	sim_result_free(&a3);
	sim_result_free(&s3);
	sim_trace_free(&t);
}

/* A job that fails at max_restarts throws all its work away: that is counted too. */
static void test_failed_job_work_is_counted(void **state)
{
	struct fx_opts fo = { .servers = 1 };
	struct sim_result st, as;
	struct sim_summary sa;
	struct sim_options o;
	struct sim_trace t;
	bool seen = false;

	(void)state;
	for (uint64_t seed = 1; seed <= 20 && !seen; seed++) {
		trace_ok("submit_sec,duration_sec,npus,queue,priority\n0,360000,8,,\n", &t);
		sim_options_default(&o);
		o.seed = seed;
		o.mtbf_sec = 80 * 3600; /* 8 NPUs: a fault every ~10 h, within the 100 h job */
		o.max_restarts = 0;
		o.checkpoint_sec = 3600;
		run_both(&t, &fo, &o, &st, &as);
		if (as.jobs[0].outcome == SIM_FAILED) {
			const struct sim_jobrec *j = &as.jobs[0];

			seen = true;
			assert_int_equal(j->fault_restarts, 1);
			assert_int_equal(j->restarts, 0);
			/* everything it ran is lost: what the fault cost plus the rest */
			assert_true(j->lost_abandoned_npu_sec > 0);
			assert_true(j->lost_fault_npu_sec + j->lost_abandoned_npu_sec ==
				    (double)j->run_total_sec * 8);
			assert_int_equal(st.jobs[0].outcome, SIM_FAILED);
			assert_int_equal(sim_summarize(&t, &as, &sa), 0);
			assert_int_equal(sa.failed, 1);
			assert_true(sa.lost_abandoned_npu_h > 0);
		}
		sim_result_free(&st);
		sim_result_free(&as);
		sim_trace_free(&t);
	}
	assert_true(seen);
}

/* p99 by nearest rank: of the delays 0..99 s, the 99th smallest. */
static void test_p99_is_nearest_rank(void **state)
{
	struct fx_opts fo = { .servers = 1 };
	struct sim_result st, as;
	struct sim_summary ss;
	struct sim_options o;
	struct sim_trace t;
	char *csv = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&csv, &len);

	(void)state;
	/* 100 one-second jobs on all 8 NPUs arrive at 0: the k-th waits k seconds */
	fprintf(f, "submit_sec,duration_sec,npus,queue,priority\n");
	for (int i = 0; i < 100; i++)
		fprintf(f, "0,1,8,,\n");
	assert_int_equal(fclose(f), 0);
	trace_ok(csv, &t);
	free(csv);
	sim_options_default(&o);
	run_both(&t, &fo, &o, &st, &as);
	assert_int_equal(sim_summarize(&t, &st, &ss), 0);
	assert_true(ss.wait_max == 99);
	assert_true(ss.wait_p99 == 98);
	assert_true(ss.wait_median == 49.5);
	sim_result_free(&st);
	sim_result_free(&as);
	sim_trace_free(&t);
}

/* ---- figures ---- */

static void test_tp_groups_crossing_servers(void **state)
{
	struct fx_opts fo = { .servers = 4, .switches = 2 };
	struct sched_cluster *c = fx_cluster(&fo);
	struct sim_result r;
	struct sim_options o;
	struct sim_trace t;
	const struct sim_share whole[] = { { 0, 8, NULL }, { 1, 8, NULL } };
	const struct sim_share split[] = { { 0, 4, NULL }, { 2, 4, NULL } };
	const struct sim_share odd[] = { { 0, 2, NULL }, { 1, 6, NULL } };

	(void)state;
	trace_ok("submit_sec,duration_sec,npus,queue,priority\n0,100,16,,\n1,100,8,,\n2,100,8,,\n",
		 &t);
	sim_options_default(&o);
	assert_int_equal(sim_result_init(&r, "x", &t, c->npus_total), 0);
	sim_acct_placement(&r, &t, &o, c, 0, whole, 2, 1);
	assert_int_equal(r.tp_groups, 2);
	assert_int_equal(r.tp_cross, 0);
	assert_int_equal(r.multi_extra_switch, 0); /* servers 0 and 1: leaf-0 */
	sim_acct_placement(&r, &t, &o, c, 1, split, 2, 1);
	assert_int_equal(r.tp_groups, 3);
	assert_int_equal(r.tp_cross, 1);
	assert_int_equal(r.tp_cross_avoidable, 1);
	assert_int_equal(r.multi_extra_switch, 1);	    /* servers 0 and 2: two leaves */
	assert_int_equal(r.multi_extra_switch_avoidable, 1); /* one leaf was free */
	o.tp = 4;
	sim_acct_placement(&r, &t, &o, c, 2, odd, 2, 0);
	/* ranks 0-3 span servers 0 and 1; ranks 4-7 are on server 1 */
	assert_int_equal(r.tp_groups, 5);
	assert_int_equal(r.tp_cross, 2);
	/* the step model of each job's first placement: the split TP group sends over RoCE */
	assert_true(r.jobs[1].step_usec > r.jobs[1].compute_usec);
	assert_true(r.jobs[1].roce_spine_bytes > 0);
	assert_true(r.jobs[0].roce_leaf_bytes > 0 && r.jobs[0].roce_spine_bytes == 0);
	assert_true(r.step_sum / r.step_weight > 1.0);
	sim_result_free(&r);
	sim_trace_free(&t);
	sched_cluster_free(c);
}

static void test_least_switches(void **state)
{
	const unsigned per[] = { 3, 1, 2 };

	(void)state;
	assert_int_equal(sim_least_switches(per, 3, 1), 1);
	assert_int_equal(sim_least_switches(per, 3, 3), 1);
	assert_int_equal(sim_least_switches(per, 3, 4), 2);
	assert_int_equal(sim_least_switches(per, 3, 6), 3);
	assert_int_equal(sim_least_switches(per, 3, 7), 0);
}

/* ---- figures one can work out by hand ---- */

static struct sched_cluster *cluster_of_yaml(const char *yaml)
{
	struct conf_cluster *conf = NULL;
	struct sched_cluster *c = NULL;
	struct conf_error err;
	char msg[1024];

	memset(&err, 0, sizeof(err));
	if (conf_cluster_parse(yaml, strlen(yaml), "hand.yaml", &conf, &err) < 0)
		fail_msg("%s", conf_error_format(&err, msg, sizeof(msg)));
	assert_int_equal(sched_cluster_new(conf, &c), 0);
	return c;
}

/*
 * --tp 6 on 8-NPU servers: a 16-NPU job takes two whole servers and ranks 6-11 must
 * straddle them whatever the placement, so that crossing is not "avoidable" and must
 * not turn the goal "no tensor-parallel group across servers where one server could
 * hold it" into NOT met.
 */
static void test_sim_tp_crossing_that_no_placement_avoids(void **state)
{
	struct fx_opts fo = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&fo);
	const struct sim_share whole[] = { { 0, 8, NULL }, { 1, 8, NULL } };
	struct sim_result r;
	struct sim_options o;
	struct sim_trace t;

	(void)state;
	trace_ok("submit_sec,duration_sec,npus,queue,priority\n0,100,16,,\n", &t);
	sim_options_default(&o);
	o.tp = 6;
	assert_int_equal(sim_result_init(&r, "x", &t, c->npus_total), 0);
	sim_acct_placement(&r, &t, &o, c, 0, whole, 2, 1);
	assert_int_equal(r.tp_groups, 3);
	assert_int_equal(r.tp_cross, 1);
	assert_int_equal(r.tp_cross_avoidable, 0);
	sim_result_free(&r);
	sim_trace_free(&t);
	sched_cluster_free(c);
}

/*
 * A2 (8 NPUs) and A3 (16 NPUs) servers: a 24-NPU job can only run on three A2 servers
 * (24 is no multiple of 16), so with --tp 16 its first group must cross two A2
 * servers. The A3 server elsewhere in the cluster does not make that avoidable.
 */
static void test_sim_tp_crossing_judged_by_the_jobs_server_type(void **state)
{
	char *yaml = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&yaml, &len);
	struct sched_cluster *c;
	const struct sim_share a2[] = { { 0, 8, NULL }, { 1, 8, NULL }, { 2, 8, NULL } };
	char reason[SCHED_REASON_MAX];
	struct sim_result r;
	struct sim_options o;
	struct sim_trace t;

	(void)state;
	fprintf(f, "cluster:\n  name: mixed\n  scheduler_ip: 10.0.0.1\n"
		   "resource:\n  total_npu: 40\n  allow_mix_task: true\nservers:\n");
	for (unsigned i = 0; i < 3; i++) {
		fprintf(f, "  - name: a2-%u\n    host_ip: 10.1.0.%u\n    type: atlas800t-a2\n"
			   "    switch: leaf-0\n    device_ips: [",
			i, i + 1);
		for (unsigned d = 0; d < 8; d++)
			fprintf(f, "%s10.%u.0.%u", d ? ", " : "", 16 + d, i + 1);
		fprintf(f, "]\n");
	}
	fprintf(f, "  - name: a3-0\n    host_ip: 10.1.1.1\n    type: atlas900-a3\n"
		   "    switch: leaf-1\n    super_pod: \"p0\"\n    device_ips: [");
	for (unsigned d = 0; d < 16; d++)
		fprintf(f, "%s10.%u.1.1", d ? ", " : "", 16 + d);
	fprintf(f, "]\n");
	assert_int_equal(fclose(f), 0);
	c = cluster_of_yaml(yaml);
	free(yaml);
	/* the premise: 24 NPUs fit the A2 servers and no A3 placement */
	assert_int_equal(sched_check_feasible(c, 24, conf_server_type_find("atlas800t-a2"),
					      reason),
			 0);
	assert_true(sched_check_feasible(c, 24, conf_server_type_find("atlas900-a3"), reason) <
		    0);
	trace_ok("submit_sec,duration_sec,npus,queue,priority\n0,100,24,,\n", &t);
	sim_options_default(&o);
	o.tp = 16;
	assert_int_equal(sim_result_init(&r, "x", &t, c->npus_total), 0);
	sim_acct_placement(&r, &t, &o, c, 0, a2, 3, 1);
	assert_int_equal(r.tp_groups, 2);
	assert_int_equal(r.tp_cross, 1);
	assert_int_equal(r.tp_cross_avoidable, 0);
	sim_result_free(&r);
	sim_trace_free(&t);
	sched_cluster_free(c);
}

/*
 * The static workflow gives a 1-NPU job a whole 8-NPU server, but its rank table lists
 * one device: a fault on one of the other seven does not kill it (sim.h: "a fault on
 * any NPU of a job kills it"). Over many seeds about 1 in 8 faults should hit it, as
 * under ascendfs; the static engine kills it on every fault on the server.
 */
static void test_sim_static_fault_on_a_device_the_job_does_not_use(void **state)
{
	struct fx_opts fo = { .servers = 1 };
	uint64_t st_hit = 0, st_faults = 0, as_hit = 0, as_faults = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct sched_cluster *view = fx_cluster(&fo);
		struct conf_cluster *conf = NULL;
		struct sim_result st, as;
		struct sim_options o;
		struct sim_trace t;
		struct conf_error err;
		char *yaml = fx_cluster_yaml(&fo), msg[1024], e[SIM_ERR_MAX] = "";

		trace_ok("submit_sec,duration_sec,npus,queue,priority\n0,20000,1,,\n", &t);
		sim_options_default(&o);
		o.seed = seed;
		o.mtbf_sec = 80000; /* 8 NPUs: a fault every ~10000 s */
		o.repair_sec = 1;
		memset(&err, 0, sizeof(err));
		if (conf_cluster_parse(yaml, strlen(yaml), "fixture.yaml", &conf, &err) < 0)
			fail_msg("%s", conf_error_format(&err, msg, sizeof(msg)));
		free(yaml);
		if (sim_run_static(&t, view, &o, &st, e) < 0)
			fail_msg("static replay: %s", e);
		if (sim_run_ascendfs(&t, conf, &o, &as, e) < 0)
			fail_msg("ascendfs replay: %s", e);
		st_hit += st.faults_hit;
		st_faults += st.faults - st.faults_absorbed;
		as_hit += as.faults_hit;
		as_faults += as.faults - as.faults_absorbed;
		sim_result_free(&st);
		sim_result_free(&as);
		sim_trace_free(&t);
		sched_cluster_free(view);
	}
	print_message("static: %llu of %llu faults hit the job; ascendfs: %llu of %llu\n",
		      (unsigned long long)st_hit, (unsigned long long)st_faults,
		      (unsigned long long)as_hit, (unsigned long long)as_faults);
	assert_true(as_faults > 0 && st_faults > 0);
	assert_true(as_hit * 2 < as_faults);
	assert_true(st_hit * 2 < st_faults);
}

/*
 * A stretched run (--stretch-runs: 2.5x slower than on an empty cluster): its 10,000 s
 * of trace run take 25,000 s on the wall; a fault at wall 13,400 s (5,360 s of run,
 * checkpoints every 1,800 s of run) resumes from 3,600 and loses 13,400 - 3,600 x 2.5
 * = 4,400 wall seconds, within one checkpoint interval at its speed (4,500 s): not over
 * the bound (counted against 1,800 wall seconds before, it was, ratio 2.44).
 */
static void test_stretched_run_checkpoints_at_its_speed(void **state)
{
	const char csv[] = "submit_sec,duration_sec,npus,queue,priority\n0,10000,8,,\n";
	struct sim_trace t;
	struct sim_result r;
	struct sim_options o;
	char err[SIM_ERR_MAX] = "";

	(void)state;
	assert_int_equal(sim_trace_parse(csv, strlen(csv), "t.csv", &t, err), 0);
	sim_options_default(&o);
	o.checkpoint_sec = 1800;
	o.restart_cost_sec = 0;
	o.stretch_runs = true;
	assert_int_equal(sim_result_init(&r, "x", &t, 64), 0);
	r.jobs[0].stretch = 2.5;
	assert_int_equal(sim_acct_start(&r, &t, &o, 0, 1, 8, 1, 0, 0), 25000);
	assert_int_equal(sim_acct_interrupt(&r, &o, 0, 13400, SIM_CAUSE_FAULT, true), 3600);
	assert_true(r.jobs[0].lost_fault_npu_sec == 4400.0 * 8);
	assert_int_equal(r.interruptions_over_bound, 0);
	assert_true(r.worst_loss_ratio < 1);
	/* on one at full speed, the rest of the run: 6,400 s */
	r.jobs[0].stretch = 1;
	assert_int_equal(sim_acct_start(&r, &t, &o, 0, 2, 8, 1, 13400, 3600), 13400 + 6400);
	sim_result_free(&r);
	sim_trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_philly_sorts_and_maps),
		cmocka_unit_test(test_trace_plain_defaults),
		cmocka_unit_test(test_trace_errors_say_where),
		cmocka_unit_test(test_trace_slice_and_scale),
		cmocka_unit_test(test_trace_parse_survives_allocation_failures),
		cmocka_unit_test(test_fit_raises_and_removes),
		cmocka_unit_test(test_trace_layout_columns),
		cmocka_unit_test(test_trace_layout_errors_say_where),
		cmocka_unit_test(test_fit_keeps_the_layout),
		cmocka_unit_test(test_model_compute_time),
		cmocka_unit_test(test_static_matches_sched_fifo),
		cmocka_unit_test(test_faults_lose_at_most_a_checkpoint_interval),
		cmocka_unit_test(test_faults_with_dump_lose_at_most_a_step),
		cmocka_unit_test(test_faults_with_process_level_pay_the_rebuild),
		cmocka_unit_test(test_transient_faults_are_retried),
		cmocka_unit_test(test_preempted_job_resumes_from_its_checkpoint),
		cmocka_unit_test(test_small_jobs_share_servers),
		cmocka_unit_test(test_same_seed_same_replay),
		cmocka_unit_test(test_failed_job_work_is_counted),
		cmocka_unit_test(test_p99_is_nearest_rank),
		cmocka_unit_test(test_tp_groups_crossing_servers),
		cmocka_unit_test(test_least_switches),
		cmocka_unit_test(test_sim_tp_crossing_that_no_placement_avoids),
		cmocka_unit_test(test_sim_tp_crossing_judged_by_the_jobs_server_type),
		cmocka_unit_test(test_sim_static_fault_on_a_device_the_job_does_not_use),
		cmocka_unit_test(test_stretched_run_checkpoints_at_its_speed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
