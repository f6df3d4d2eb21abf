/* SPDX-License-Identifier: MIT */
/*
 * ascend-sim: replay a job trace against ascendfs's scheduler, the same scheduler with
 * topology-blind placement, and the static rank-table workflow, with a virtual clock,
 * and print one table of ratios (sim.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

static const char usage[] =
	"usage: ascend-sim --trace FILE.csv (--config CLUSTER.yaml | --servers N) [options]\n"
	"\n"
	"Replays a job trace three times on the same cluster, with the same NPU faults:\n"
	"through ascendfs's scheduler (the configuration's queues, backfill, preemption,\n"
	"topology-aware placement, recovery from the newest checkpoint); through the same\n"
	"scheduler with topology-blind placement (blind: any free NPUs as a gang, bin-packed\n"
	"as Volcano's binpack plugin does, no HCCS, whole-server or switch rules); and\n"
	"through the static rank-table workflow (whole servers, FIFO, first free servers, no\n"
	"backfill, a fault restarts the job from scratch). Prints one table with the ratios\n"
	"ascendfs/static and ascendfs/blind.\n"
	"\n"
	"Input:\n"
	"  --trace FILE           CSV with the header timestamp,duration,num_gpus,gpu_time,\n"
	"                         cluster (Philly: one GPU = one NPU, each virtual cluster a\n"
	"                         queue) or submit_sec,duration_sec,npus,queue,priority,\n"
	"                         optionally followed by any of tp,pp,ep,cp (the parallel\n"
	"                         layout) and model (llama70b, moe; empty: a dense model\n"
	"                         of 1e9 parameters per NPU up to 70e9)\n"
	"  --config FILE          cluster configuration (as for ascendfs); queues the trace\n"
	"                         names and the file lacks are added with weight 1\n"
	"  --servers N            instead of --config: N Atlas 800T A2 servers (8 NPUs each)\n"
	"  --switch-size K        with --servers: servers per leaf switch (default 16)\n"
	"  --slice A:B            only jobs A..B-1 in submit order, from 0 (A: and :B work)\n"
	"  --load-scale X         arrivals X times as fast (run times unchanged; default 1)\n"
	"Policies (ascendfs side; default: as the configuration says, on for --servers):\n"
	"  --backfill on|off      EASY backfill\n"
	"  --preemption on|off    priority preemption\n"
	"  --time-limit hour|exact|none  each job's time_limit: its run time plus what three\n"
	"                         restarts may redo (checkpoint interval + restart cost\n"
	"                         each), rounded up to the hour (default) or exact; none\n"
	"                         leaves EASY backfill nothing to plan with\n"
	"Faults:\n"
	"  --mtbf DURATION        mean time between failures of one NPU, e.g. 50000h;\n"
	"                         default none\n"
	"  --repair DURATION      a failed NPU returns to service after this (default 8h)\n"
	"  --checkpoint-interval DURATION  jobs save a checkpoint every DURATION of run time\n"
	"                         (default 30m; 0: never)\n"
	"  --restart-cost DURATION  run time a restarted job needs before it makes progress\n"
	"                         (relaunch, HCCL init, checkpoint load; default 0)\n"
	"  --recovery job|dump|process|retry  ascendfs's recovery ladder: job (default)\n"
	"                         restarts\n"
	"                         from the newest checkpoint; dump (recovery: [dump, job]) has\n"
	"                         the survivors save the step they finished first, so a fault\n"
	"                         loses the step in flight and the restart costs --dump-save\n"
	"                         more; process (recovery: [process, dump, job]) as dump, but\n"
	"                         a job of several servers placed again at once, its healthy\n"
	"                         servers kept, costs --rebuild-cost instead of the restart;\n"
	"                         retry ([retry, process, dump, job]) as process, and a\n"
	"                         transient fault (--transient-share) costs the step and\n"
	"                         --retry-cost, the job running on\n"
	"  --dump-save DURATION   time of the dying-gasp save (default 10s)\n"
	"  --rebuild-cost DURATION  process-level recovery: the replacement's start, link\n"
	"                         set-up and state taken from replicas (default 30s)\n"
	"  --transient-share F    with --recovery retry: the share (0-1) of the faults that\n"
	"                         are transient (their codes in retry_fault_codes): a running\n"
	"                         job retries its step and runs on (default 0)\n"
	"  --retry-cost DURATION  a retry's pause and restart of the step (default 10s)\n"
	"  --step-time DURATION   one training step, the most a dump loses (default 5s)\n"
	"  --seed N               fault sequence (default 1)\n"
	"  --max-restarts N       restarts after faults before a job fails, in both\n"
	"                         replays (default 100)\n"
	"Topology figures:\n"
	"  --tp N                 tensor-parallel group size in ranks for jobs whose trace\n"
	"                         row gives no tp (default 8)\n"
	"  --mfu X                model FLOP utilization of the step model's compute time:\n"
	"                         6 x parameters x tokens / (NPUs x 910B peak x X)\n"
	"                         (default 0.4)\n"
	"  --stretch-runs on|off  a placement whose modelled step is slower than the job's\n"
	"                         step on an empty cluster makes it run that much longer in\n"
	"                         the replay (default off: the trace's run times)\n"
	"  --spine-oversubscription X  leaf-to-spine oversubscription (default: the --config's\n"
	"                         cluster.spine_oversubscription, 1:1 when it has none; 2\n"
	"                         with --servers; 1 means a non-blocking fabric)\n"
	"                         Each job's first placement under each engine gets a\n"
	"                         modelled step time (sched_comm.c's alpha-beta model of its\n"
	"                         tp, cp, ep, pp and dp collectives on the links it got)\n"
	"Output:\n"
	"  --out DIR              write summary.csv, utilization.csv, jobs.csv and\n"
	"                         utilization.gp there, and plot with gnuplot\n"
	"  --plot svg|png|none    figure format (default svg)\n"
	"  --sample DURATION      time-series step (default 1h)\n"
	"  -h, --help             print this help; -V, --version: the version\n"
	"\n"
	"Durations: 90, 90s, 30m, 2h, 1d, 1h30m. Exit status: 0, 1 (a replay error),\n"
	"2 (bad arguments or input).\n";

enum {
	OPT_TRACE = 256, OPT_CONFIG, OPT_SERVERS, OPT_SWITCH, OPT_SLICE, OPT_LOAD, OPT_BACKFILL,
	OPT_PREEMPT, OPT_LIMIT, OPT_MTBF, OPT_REPAIR, OPT_CKPT, OPT_COST, OPT_SEED, OPT_TP,
	OPT_COMM, OPT_SPINE, OPT_OUT, OPT_PLOT, OPT_SAMPLE, OPT_RESTARTS, OPT_RECOVERY,
	OPT_DUMP_SAVE, OPT_STEP, OPT_REBUILD, OPT_TRANSIENT, OPT_RETRY_COST, OPT_MFU,
	OPT_STRETCH,
};

struct args {
	const char *trace, *config, *out, *plot;
	unsigned servers, switch_size;
	size_t from, to;
	double load;
	int backfill, preemption; /* -1: as configured */
	bool spine_given;	/* --spine-oversubscription overrides the configuration's */
};

__attribute__((format(printf, 1, 2))) static int bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ascend-sim: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(ascend-sim --help lists the options)\n");
	return 2;
}

static int read_duration(const char *opt, const char *v, uint64_t *ret)
{
	if (conf_parse_duration(v, ret) < 0)
		return bad("%s: '%s' is not a duration (e.g. 90s, 30m, 2h, 1d)", opt, v);
	if (*ret > SIM_TIME_MAX)
		return bad("%s: '%s' is longer than the 100 years ascend-sim replays", opt, v);
	return 0;
}

/* A whole number from @lo to @hi. */
static int read_whole(const char *opt, const char *v, unsigned long lo, unsigned long hi,
		      unsigned long *ret)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 10);
	if (*v < '0' || *v > '9' || errno || *end || x < lo || x > hi)
		return bad("%s: '%s' is not a whole number from %lu to %lu", opt, v, lo, hi);
	*ret = x;
	return 0;
}

static int read_onoff(const char *opt, const char *v, int *ret)
{
	if (strcmp(v, "on") == 0 || strcmp(v, "true") == 0)
		*ret = 1;
	else if (strcmp(v, "off") == 0 || strcmp(v, "false") == 0)
		*ret = 0;
	else
		return bad("%s: '%s' is not on or off", opt, v);
	return 0;
}

static int read_number(const char *opt, const char *v, double lo, double hi, double *ret)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || *end || !(x >= lo && x <= hi)) {
		char range[64];

		snprintf(range, sizeof(range), "%g to %g", lo, hi);
		fprintf(stderr, "ascend-sim: %s: '%s' is not a number from %s\n", opt, v, range);
		return 2;
	}
	*ret = x;
	return 0;
}

static int read_slice(const char *v, size_t *from, size_t *to)
{
	const char *colon = strchr(v, ':');
	char *end;

	if (!colon)
		return bad("--slice: '%s' is not A:B (e.g. 0:20000, 5000:, :1000)", v);
	*from = 0;
	*to = SIZE_MAX;
	if (colon != v) {
		*from = strtoull(v, &end, 10);
		if (end != colon || *v < '0' || *v > '9')
			return bad("--slice: '%s': A is not a job number", v);
	}
	if (colon[1]) {
		*to = strtoull(colon + 1, &end, 10);
		if (*end || colon[1] < '0' || colon[1] > '9')
			return bad("--slice: '%s': B is not a job number", v);
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a, struct sim_options *o)
{
	static const struct option opts[] = {
		{ "trace", required_argument, NULL, OPT_TRACE },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "servers", required_argument, NULL, OPT_SERVERS },
		{ "switch-size", required_argument, NULL, OPT_SWITCH },
		{ "slice", required_argument, NULL, OPT_SLICE },
		{ "load-scale", required_argument, NULL, OPT_LOAD },
		{ "backfill", required_argument, NULL, OPT_BACKFILL },
		{ "preemption", required_argument, NULL, OPT_PREEMPT },
		{ "time-limit", required_argument, NULL, OPT_LIMIT },
		{ "mtbf", required_argument, NULL, OPT_MTBF },
		{ "repair", required_argument, NULL, OPT_REPAIR },
		{ "checkpoint-interval", required_argument, NULL, OPT_CKPT },
		{ "restart-cost", required_argument, NULL, OPT_COST },
		{ "recovery", required_argument, NULL, OPT_RECOVERY },
		{ "dump-save", required_argument, NULL, OPT_DUMP_SAVE },
		{ "step-time", required_argument, NULL, OPT_STEP },
		{ "rebuild-cost", required_argument, NULL, OPT_REBUILD },
		{ "transient-share", required_argument, NULL, OPT_TRANSIENT },
		{ "retry-cost", required_argument, NULL, OPT_RETRY_COST },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "max-restarts", required_argument, NULL, OPT_RESTARTS },
		{ "tp", required_argument, NULL, OPT_TP },
		{ "comm-share", required_argument, NULL, OPT_COMM },
		{ "spine-oversubscription", required_argument, NULL, OPT_SPINE },
		{ "mfu", required_argument, NULL, OPT_MFU },
		{ "stretch-runs", required_argument, NULL, OPT_STRETCH },
		{ "out", required_argument, NULL, OPT_OUT },
		{ "plot", required_argument, NULL, OPT_PLOT },
		{ "sample", required_argument, NULL, OPT_SAMPLE },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long u;
	int c, r = 0;

	memset(a, 0, sizeof(*a));
	a->switch_size = 16;
	a->to = SIZE_MAX;
	a->load = 1;
	a->backfill = a->preemption = -1;
	a->plot = "svg";
	sim_options_default(o);
	while (r == 0 && (c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case OPT_TRACE:
			a->trace = optarg;
			break;
		case OPT_CONFIG:
			a->config = optarg;
			break;
		case OPT_SERVERS:
			r = read_whole("--servers", optarg, 1, 16384, &u);
			a->servers = (unsigned)u;
			break;
		case OPT_SWITCH:
			r = read_whole("--switch-size", optarg, 1, 16384, &u);
			a->switch_size = (unsigned)u;
			break;
		case OPT_SLICE:
			r = read_slice(optarg, &a->from, &a->to);
			break;
		case OPT_LOAD:
			r = read_number("--load-scale", optarg, 0.001, 1000, &a->load);
			break;
		case OPT_BACKFILL:
			r = read_onoff("--backfill", optarg, &a->backfill);
			break;
		case OPT_PREEMPT:
			r = read_onoff("--preemption", optarg, &a->preemption);
			break;
		case OPT_LIMIT:
			if (strcmp(optarg, "hour") == 0)
				o->time_limit = SIM_LIMIT_HOUR;
			else if (strcmp(optarg, "exact") == 0)
				o->time_limit = SIM_LIMIT_EXACT;
			else if (strcmp(optarg, "none") == 0)
				o->time_limit = SIM_LIMIT_NONE;
			else
				r = bad("--time-limit: '%s' is not hour, exact or none", optarg);
			break;
		case OPT_MTBF:
			r = read_duration("--mtbf", optarg, &o->mtbf_sec);
			break;
		case OPT_REPAIR:
			r = read_duration("--repair", optarg, &o->repair_sec);
			if (!r && !o->repair_sec)
				r = bad("--repair: '%s': a repair takes at least 1 s", optarg);
			break;
		case OPT_CKPT:
			r = read_duration("--checkpoint-interval", optarg, &o->checkpoint_sec);
			break;
		case OPT_COST:
			r = read_duration("--restart-cost", optarg, &o->restart_cost_sec);
			break;
		case OPT_RECOVERY:
			if (strcmp(optarg, "dump") == 0 || strcmp(optarg, "job") == 0 ||
			    strcmp(optarg, "process") == 0 || strcmp(optarg, "retry") == 0) {
				o->dump = optarg[0] == 'd';
				o->process = optarg[0] == 'p' || optarg[0] == 'r';
				o->retry = optarg[0] == 'r';
			} else {
				r = bad("--recovery: '%s': use job, dump, process or retry", optarg);
			}
			break;
		case OPT_TRANSIENT:
			r = read_number("--transient-share", optarg, 0, 1, &o->transient_share);
			break;
		case OPT_RETRY_COST:
			r = read_duration("--retry-cost", optarg, &o->retry_sec);
			break;
		case OPT_REBUILD:
			r = read_duration("--rebuild-cost", optarg, &o->rebuild_sec);
			break;
		case OPT_DUMP_SAVE:
			r = read_duration("--dump-save", optarg, &o->dump_save_sec);
			break;
		case OPT_STEP:
			r = read_duration("--step-time", optarg, &o->step_sec);
			break;
		case OPT_SEED:
			r = read_whole("--seed", optarg, 0, 4294967295ul, &u);
			o->seed = u;
			break;
		case OPT_RESTARTS:
			r = read_whole("--max-restarts", optarg, 0, 1000, &u);
			o->max_restarts = (unsigned)u;
			break;
		case OPT_TP:
			r = read_whole("--tp", optarg, 1, 4096, &u);
			o->tp = (unsigned)u;
			break;
		case OPT_COMM:
			r = bad("--comm-share: the step-time proxy it tuned is gone; each job's "
				"step is modelled from its layout and links (see --mfu)");
			break;
		case OPT_SPINE:
			r = read_number("--spine-oversubscription", optarg, 1, 64, &o->spine_oversub);
			a->spine_given = true;
			break;
		case OPT_MFU:
			r = read_number("--mfu", optarg, 0.01, 1, &o->mfu);
			break;
		case OPT_STRETCH: {
			int on = 0;

			r = read_onoff("--stretch-runs", optarg, &on);
			o->stretch_runs = on == 1;
			break;
		}
		case OPT_OUT:
			a->out = optarg;
			if (!*optarg)
				r = bad("--out: give a directory for the files");
			break;
		case OPT_PLOT:
			if (strcmp(optarg, "none") == 0)
				a->plot = NULL;
			else if (strcmp(optarg, "svg") == 0 || strcmp(optarg, "png") == 0)
				a->plot = optarg;
			else
				r = bad("--plot: '%s' is not svg, png or none", optarg);
			break;
		case OPT_SAMPLE:
			r = read_duration("--sample", optarg, &o->sample_sec);
			if (!r && o->sample_sec < 60)
				r = bad("--sample: '%s': use at least 60 s", optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case 'V':
			printf("ascend-sim %s\n", ASCENDFS_VERSION);
			exit(0);
		default:
			return 2;
		}
	}
	if (r)
		return r;
	if (optind < argc)
		return bad("unexpected argument '%s'", argv[optind]);
	if (!a->trace)
		return bad("give the trace with --trace FILE.csv");
	if (!a->config == !a->servers)
		return bad("give the cluster with --config FILE or --servers N (one of them)");
	return 0;
}

/* The generated cluster: @n Atlas 800T A2 servers, @k per leaf switch. */
static char *generated_config(unsigned n, unsigned k, size_t *ret_len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, ret_len);

	if (!f)
		return NULL;
	fprintf(f, "cluster:\n  name: sim\n  scheduler_ip: 10.0.0.1\n  spine_oversubscription: 2\n"
		   "resource:\n  total_npu: %u\n  allow_mix_task: true\n"
		   "  backfill: true\n  preemption: true\nservers:\n",
		n * 8);
	for (unsigned i = 0; i < n; i++) {
		fprintf(f, "  - name: node-%04u\n    host_ip: 10.%u.%u.%u\n    type: atlas800t-a2\n"
			   "    switch: leaf-%03u\n    device_ips: [",
			i, 100 + i / 65536, i / 256 % 256, i % 256, i / k);
		for (unsigned d = 0; d < 8; d++)
			fprintf(f, "%s10.%u.%u.%u", d ? ", " : "", 16 + d * 8 + i / 65536,
				i / 256 % 256, i % 256);
		fprintf(f, "]\n");
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static int load_config(const struct args *a, const char *text, size_t len,
		       struct conf_cluster **ret)
{
	struct conf_error err;
	char msg[1024];
	int r;

	memset(&err, 0, sizeof(err));
	r = a->config ? conf_cluster_load(a->config, ret, &err) :
			conf_cluster_parse(text, len, "generated.yaml", ret, &err);
	if (r < 0) {
		fprintf(stderr, "ascend-sim: %s\n", conf_error_format(&err, msg, sizeof(msg)));
		return r;
	}
	if (a->backfill >= 0)
		(*ret)->backfill = a->backfill;
	if (a->preemption >= 0)
		(*ret)->preemption = a->preemption;
	return 0;
}

static int load_trace(const char *path, struct sim_trace *t)
{
	char err[SIM_ERR_MAX], *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "re");
	int r;

	if (!f) {
		fprintf(stderr, "ascend-sim: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	{
		struct stat st;

		if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
			fprintf(stderr, "ascend-sim: %s is a directory; --trace takes a CSV file\n",
				path);
			fclose(f);
			return -EISDIR;
		}
	}
	{
		FILE *m = open_memstream(&buf, &len);
		char chunk[65536];
		size_t n;

		if (!m) {
			fclose(f);
			return -ENOMEM;
		}
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		r = ferror(f) ? -EIO : 0;
		if (fclose(m) != 0)
			r = -ENOMEM;
	}
	fclose(f);
	if (r < 0) {
		fprintf(stderr, "ascend-sim: %s: %s\n", path, strerror(-r));
		free(buf);
		return r;
	}
	r = sim_trace_parse(buf, len, path, t, err);
	free(buf);
	if (r < 0)
		fprintf(stderr, "ascend-sim: %s\n", err);
	return r;
}

static void print_goals(const struct sim_result *st, const struct sim_summary *ss,
			const struct sim_result *as, const struct sim_summary *sa,
			const struct sim_options *o)
{
	bool all_ran = sa->never == 0 && sa->unfinished == 0;

	printf("\ngoals (ascendfs):\n");
	if (as->time_wait > 0)
		printf("  allocation (NPUs running jobs) while jobs wait >= 90%%: %.1f%% (static "
		       "%.1f%%): %s\n",
		       sa->used_wait_pct, ss->used_wait_pct,
		       sa->used_wait_pct >= 90 ? "met" : "NOT met");
	else
		printf("  allocation (NPUs running jobs) while jobs wait >= 90%%: no job ever "
		       "waited: met\n");
	printf("  mean queueing delay below static FIFO's, every job started: %.2f h vs %.2f h"
	       "%s: %s\n",
	       sa->wait_mean / 3600, ss->wait_mean / 3600,
	       all_ran ? "" : " (some jobs never started or never finished)",
	       all_ran && (sa->wait_mean < ss->wait_mean ||
			   (sa->wait_mean == 0 && ss->wait_mean == 0)) ?
		       "met" :
		       "NOT met");
	/* issue 20: priority may reorder jobs, but the slowest-served 1% must not wait longer
	 * than under strict FIFO (the static workflow) */
	printf("  p99 queueing delay no worse than static FIFO's, every job started: %.1f h vs "
	       "%.1f h%s: %s\n",
	       sa->wait_p99 / 3600, ss->wait_p99 / 3600,
	       all_ran ? "" : " (some jobs never started or never finished)",
	       all_ran && sa->wait_p99 <= ss->wait_p99 ? "met" : "NOT met");
	printf("  no tensor-parallel group across servers where one server could hold it: "
	       "%llu of %llu groups: %s\n",
	       (unsigned long long)as->tp_cross_avoidable, (unsigned long long)as->tp_groups,
	       as->tp_cross_avoidable == 0 ? "met" : "NOT met");
	if (o->mtbf_sec && o->checkpoint_sec)
		printf("  work lost per interruption <= checkpoint interval + restart cost "
		       "(%llu s): worst %.2f of it, %llu over: %s (static: worst %.1f, %llu over)\n",
		       (unsigned long long)(o->checkpoint_sec + o->restart_cost_sec),
		       as->worst_loss_ratio, (unsigned long long)as->interruptions_over_bound,
		       as->interruptions_over_bound == 0 ? "met" : "NOT met", st->worst_loss_ratio,
		       (unsigned long long)st->interruptions_over_bound);
}

/* Does @j give its layout or model (then its step is printed)? */
static bool job_has_layout(const struct sim_tjob *j)
{
	return j->tp || j->pp || j->ep || j->cp || j->model;
}

/*
 * The step model's figures per job whose trace row gives a layout or model (at most
 * 20), and how many multi-server jobs ascendfs places slower than blind.
 */
static void print_steps(const struct sim_trace *t, const struct sim_result *st,
			const struct sim_result *as, const struct sim_result *bl,
			const struct sim_options *o)
{
	size_t shown = 0, listed = 0, multi = 0, slower = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct sim_jobrec *a = &as->jobs[i], *b = &bl->jobs[i];

		listed += job_has_layout(&t->jobs[i]);
		if ((a->servers > 1 || b->servers > 1) && a->step_usec > 0 && b->step_usec > 0) {
			multi++;
			slower += a->step_usec > b->step_usec * (1 + 1e-9);
		}
	}
	printf("\nstep model (each job's first placement; compute at MFU %.2f of a 910B's peak; "
	       "spine %.3g:1):\n",
	       o->mfu, o->spine_oversub);
	if (listed)
		printf("  %-6s %5s %-9s %-20s %5s %10s %11s %10s %6s  %s\n", "job", "line", "model",
		       "layout", "NPUs", "static ms", "ascendfs ms", "blind ms", "bl/as",
		       "RoCE GB per step, leaf/spine: static | ascendfs | blind");
	for (size_t i = 0; i < t->n && shown < 20; i++) {
		const struct sim_tjob *tj = &t->jobs[i];
		const struct sim_jobrec *r[3] = { &st->jobs[i], &as->jobs[i], &bl->jobs[i] };
		struct sched_parallel par;
		char layout[64] = "?", ms[3][32], ratio[16] = "-";

		if (!job_has_layout(tj))
			continue;
		shown++;
		if (sim_model_layout(tj, tj->npus, o, &par) == 0)
			snprintf(layout, sizeof(layout), "tp%u-cp%u-ep%u-dp%u-pp%u",
				 par.size[SCHED_DIM_TP], par.size[SCHED_DIM_CP],
				 par.size[SCHED_DIM_EP], par.size[SCHED_DIM_DP],
				 par.size[SCHED_DIM_PP]);
		for (int k = 0; k < 3; k++)
			if (r[k]->step_usec > 0)
				snprintf(ms[k], sizeof(ms[k]), "%.1f", r[k]->step_usec / 1e3);
			else
				snprintf(ms[k], sizeof(ms[k]), "-");
		if (r[1]->step_usec > 0 && r[2]->step_usec > 0)
			snprintf(ratio, sizeof(ratio), "%.2fx", r[2]->step_usec / r[1]->step_usec);
		printf("  j-%-4zu %5zu %-9s %-20s %5u %10s %11s %10s %6s  "
		       "%.1f/%.1f | %.1f/%.1f | %.1f/%.1f\n",
		       i, tj->line, sim_model_name(tj->model), layout, tj->npus, ms[0], ms[1],
		       ms[2], ratio, r[0]->roce_leaf_bytes / 1e9, r[0]->roce_spine_bytes / 1e9,
		       r[1]->roce_leaf_bytes / 1e9, r[1]->roce_spine_bytes / 1e9,
		       r[2]->roce_leaf_bytes / 1e9, r[2]->roce_spine_bytes / 1e9);
		/* where the difference is: each dimension's exposed communication */
		printf("  %-6s %5s %-9s comm ms", "", "", "");
		for (int d = 0; d < SCHED_DIM_COUNT; d++) {
			if (d == SCHED_DIM_CP && !r[1]->comm_usec[d] && !r[2]->comm_usec[d])
				continue;
			printf("  %s %.1f | %.1f | %.1f", sched_dim_name((enum sched_dim)d),
			       r[0]->comm_usec[d] / 1e3, r[1]->comm_usec[d] / 1e3,
			       r[2]->comm_usec[d] / 1e3);
		}
		printf("\n");
	}
	if (listed > shown)
		printf("  ... and %zu more in jobs.csv\n", listed - shown);
	printf("  multi-server jobs (under ascendfs or blind) whose step is slower under ascendfs "
	       "than blind: %zu of %zu\n",
	       slower, multi);
}

/* Make @dir (when missing) and check it takes files, before hours of replay. */
static int prepare_out(const char *dir)
{
	char probe[4096];
	int fd;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "ascend-sim: --out %s: cannot make the directory: %s\n", dir,
			strerror(errno));
		return -errno;
	}
	snprintf(probe, sizeof(probe), "%s/.ascend-sim-probe", dir);
	fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "ascend-sim: --out %s: cannot write there: %s\n", dir,
			strerror(errno));
		return -errno;
	}
	close(fd);
	unlink(probe);
	return 0;
}

static void warn_cut(const struct sim_result *r, const struct sim_options *o)
{
	if (r->stalled)
		fprintf(stderr,
			"ascend-sim: %s replay stopped: jobs waited while nothing ran and nothing "
			"started for %llu days after the last arrival (faults kept what they need "
			"from ever being free); they count as never started or unfinished\n",
			r->engine, SIM_STALL_SEC / 86400);
	if (r->series_cut)
		fprintf(stderr,
			"ascend-sim: %s replay: the time series covers only its first %.0f days; a "
			"longer --sample (now %llu s) covers it all\n",
			r->engine, (double)SIM_SERIES_MAX * o->sample_sec / 86400,
			(unsigned long long)o->sample_sec);
}

/* Wall time of a replay, for the table (the engines read no clock). */
static double mono_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sim_result st = { 0 }, as = { 0 }, bl = { 0 };
	struct sim_summary ss, sa, sb;
	struct conf_cluster *conf = NULL;
	struct sched_cluster *view = NULL;
	struct sim_trace t = { 0 };
	struct sim_options o;
	struct args a;
	char err[SIM_ERR_MAX] = "", *gen = NULL;
	size_t gen_len = 0, raised = 0, removed = 0, total_jobs;
	double work = 0, span, t0;
	int r, status = 2;

	r = parse_args(argc, argv, &a, &o);
	if (r)
		return r;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (a.servers && !(gen = generated_config(a.servers, a.switch_size, &gen_len))) {
		fprintf(stderr, "ascend-sim: out of memory\n");
		return 1;
	}
	if (load_config(&a, gen, gen_len, &conf) < 0)
		goto out;
	if (!a.spine_given)
		o.spine_oversub = conf->spine_oversub_pct / 100.0;
	r = sched_cluster_new(conf, &view); /* steals conf */
	conf = NULL;
	if (r < 0) {
		fprintf(stderr, "ascend-sim: out of memory\n");
		goto out;
	}
	if (load_trace(a.trace, &t) < 0)
		goto out;
	total_jobs = t.n;
	if ((a.from || a.to != SIZE_MAX) && sim_trace_slice(&t, a.from, a.to, err) < 0) {
		fprintf(stderr, "ascend-sim: %s\n", err);
		goto out;
	}
	sim_trace_scale_load(&t, a.load);
	if (sim_trace_fit(&t, view, &raised, &removed) < 0) {
		fprintf(stderr, "ascend-sim: out of memory\n");
		status = 1;
		goto out;
	}
	if (!t.n) {
		fprintf(stderr, "ascend-sim: no job of the trace fits this cluster (%u NPUs)\n",
			view->npus_total);
		goto out;
	}
	if (a.out && prepare_out(a.out) < 0)
		goto out;
	for (size_t i = 0; i < t.n; i++)
		work += (double)t.jobs[i].npus * (double)t.jobs[i].dur_sec;
	span = (double)t.jobs[t.n - 1].submit_sec;
	printf("ascend-sim: %s: %zu of %zu jobs (%s format, %zu queues), arrivals over %.1f days"
	       "%s\n",
	       a.trace, t.n, total_jobs, t.format == SIM_TRACE_PHILLY ? "Philly" : "plain", t.nqueue,
	       span / 86400, a.load != 1 ? " after load scaling" : "");
	printf("cluster: %zu servers, %u NPUs, %zu leaf switches (%s)", view->server_count,
	       view->npus_total, view->switch_count,
	       a.config ? a.config : "generated Atlas 800T A2");
	if (span >= 3600)
		printf("; offered load %.2f (NPU-time asked / NPU-time of the arrival window)",
		       work / (view->npus_total * span));
	printf("\n");
	if (raised || removed)
		printf("sizes: %zu jobs raised to a legal size (multi-server jobs take whole servers),"
		       " %zu larger than the cluster left out\n",
		       raised, removed);
	if (o.mtbf_sec)
		printf("faults: NPU MTBF %.4g h (one fault every %.3g h on this cluster), repair "
		       "%.3g h, checkpoint every %.4g min, restart cost %.0f s, seed %llu\n",
		       o.mtbf_sec / 3600.0, o.mtbf_sec / 3600.0 / view->npus_total,
		       o.repair_sec / 3600.0, o.checkpoint_sec / 60.0, (double)o.restart_cost_sec,
		       (unsigned long long)o.seed);
	if (o.mtbf_sec && o.dump)
		printf("recovery: dump (the survivors save the step they finished: a fault loses "
		       "at most a %llu s step; the save adds %llu s to the restart)\n",
		       (unsigned long long)o.step_sec, (unsigned long long)o.dump_save_sec);
	if (o.mtbf_sec && o.retry)
		printf("recovery: retry first (%.0f%% of the faults are transient: a running job "
		       "loses a %llu s step and %llu s, and runs on)\n", 100 * o.transient_share,
		       (unsigned long long)o.step_sec, (unsigned long long)o.retry_sec);
	if (o.mtbf_sec && o.process)
		printf("recovery: process, dump, job (a fault loses at most a %llu s step; a job "
		       "of several servers replaced at once costs %llu s instead of the restart, "
		       "else the save adds %llu s to it)\n",
		       (unsigned long long)o.step_sec, (unsigned long long)o.rebuild_sec,
		       (unsigned long long)o.dump_save_sec);
	if (!o.mtbf_sec)
		printf("faults: none (--mtbf DURATION injects them)\n");
	if (load_config(&a, gen, gen_len, &conf) < 0)
		goto out;
	printf("ascendfs policies: backfill %s, preemption %s, time_limit %s\n",
	       conf->backfill ? "on" : "off", conf->preemption ? "on" : "off",
	       o.time_limit == SIM_LIMIT_NONE ? "none" :
	       o.time_limit == SIM_LIMIT_EXACT ? "run time + 3 restarts' redo" :
						 "run time + 3 restarts' redo, rounded up to the hour");
	/* ascendfs first: it refuses rows the configuration refuses before anything runs */
	t0 = mono_sec();
	r = sim_run_ascendfs(&t, conf, &o, &as, err);
	as.wall_sec = mono_sec() - t0;
	conf = NULL;
	if (r < 0) {
		fprintf(stderr, "ascend-sim: %s\n", err);
		status = r == -EINVAL ? 2 : 1;
		goto out;
	}
	status = 1;
	if (load_config(&a, gen, gen_len, &conf) < 0)
		goto out;
	t0 = mono_sec();
	r = sim_run_sched(&t, conf, SCHED_PLACE_BLIND, &o, &bl, err);
	bl.wall_sec = mono_sec() - t0;
	conf = NULL;
	if (r < 0) {
		fprintf(stderr, "ascend-sim: blind replay: %s\n", err);
		goto out;
	}
	t0 = mono_sec();
	r = sim_run_static(&t, view, &o, &st, err);
	st.wall_sec = mono_sec() - t0;
	if (r < 0) {
		fprintf(stderr, "ascend-sim: static replay: %s\n", err);
		goto out;
	}
	if (sim_summarize(&t, &st, &ss) < 0 || sim_summarize(&t, &as, &sa) < 0 ||
	    sim_summarize(&t, &bl, &sb) < 0) {
		fprintf(stderr, "ascend-sim: out of memory\n");
		goto out;
	}
	sim_report_table(stdout, &st, &ss, &as, &sa, &bl, &sb);
	print_goals(&st, &ss, &as, &sa, &o);
	print_steps(&t, &st, &as, &bl, &o);
	warn_cut(&st, &o);
	warn_cut(&as, &o);
	warn_cut(&bl, &o);
	if (a.out) {
		r = sim_report_files(a.out, &t, &st, &ss, &as, &sa, &bl, &sb, &o, a.plot, err);
		if (r < 0) {
			fprintf(stderr, "ascend-sim: %s\n", err);
			goto out;
		}
		if (r > 0)
			fprintf(stderr, "ascend-sim: %s\n", err);
		printf("\nwrote %s/summary.csv, utilization.csv, jobs.csv, utilization.gp%s\n", a.out,
		       a.plot && r == 0 ? (strcmp(a.plot, "png") == 0 ? ", utilization.png" :
									", utilization.svg") :
					 "");
	}
	status = 0;
out:
	conf_cluster_free(conf);
	sched_cluster_free(view);
	sim_trace_free(&t);
	sim_result_free(&st);
	sim_result_free(&as);
	sim_result_free(&bl);
	free(gen);
	return status;
}
