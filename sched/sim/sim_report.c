/* SPDX-License-Identifier: MIT */
/* The figures of a replay: one table of ratios, CSV files and a gnuplot figure (sim.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim.h"

extern char **environ;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Mean, median, p99 and max of @v (@n entries, sorted here); zeros when @n is 0. */
static void stats(double *v, size_t n, double *mean, double *median, double *p99, double *max)
{
	double sum = 0;
	size_t k;

	*mean = *median = *p99 = 0;
	if (max)
		*max = 0;
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	*mean = sum / (double)n;
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	/* nearest rank: the smallest value with at least 99% of them at or below it */
	k = (size_t)ceil((double)n * 0.99);
	*p99 = v[k ? k - 1 : 0];
	if (max)
		*max = v[n - 1];
}

/* Queueing delays (first start - submit) and JCTs (end - submit) into @s. */
static int delays(const struct sim_result *r, const struct sim_trace *t, struct sim_summary *s)
{
	double *w = malloc((r->njobs ? r->njobs : 1) * sizeof(double));
	double *c = malloc((r->njobs ? r->njobs : 1) * sizeof(double));
	double *cs = malloc((r->njobs ? r->njobs : 1) * sizeof(double));
	size_t nw = 0, nc = 0;

	if (!w || !c || !cs) {
		free(w);
		free(c);
		free(cs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->njobs; i++) {
		const struct sim_jobrec *j = &r->jobs[i];

		if (j->first_start_sec != UINT64_MAX)
			w[nw++] = (double)(j->first_start_sec - t->jobs[i].submit_sec);
		if (j->outcome == SIM_DONE) {
			/* with stretch_runs the end already holds the slowdown */
			double stretch = !r->runs_stretched && j->step_usec > j->ideal_step_usec &&
							 j->ideal_step_usec > 0 ?
						 j->step_usec / j->ideal_step_usec :
						 1;

			cs[nc] = (double)(j->end_sec - t->jobs[i].submit_sec) +
				 (double)t->jobs[i].dur_sec * (stretch - 1);
			c[nc++] = (double)(j->end_sec - t->jobs[i].submit_sec);
		}
	}
	stats(w, nw, &s->wait_mean, &s->wait_median, &s->wait_p99, &s->wait_max);
	stats(c, nc, &s->jct_mean, &s->jct_median, &s->jct_p99, NULL);
	stats(cs, nc, &s->jct_step_mean, &s->jct_step_median, &s->jct_step_p99, NULL);
	free(w);
	free(c);
	free(cs);
	return 0;
}

int sim_summarize(const struct sim_trace *t, const struct sim_result *r, struct sim_summary *s)
{
	double total = r->npus_total;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < r->njobs; i++) {
		const struct sim_jobrec *j = &r->jobs[i];

		if (j->first_start_sec != UINT64_MAX)
			s->started++;
		switch (j->outcome) {
		case SIM_NEVER:
			s->never++;
			break;
		case SIM_RUNNING:
			s->unfinished++;
			break;
		case SIM_DONE:
			s->done++;
			break;
		case SIM_FAILED:
			s->failed++;
			break;
		case SIM_TIMEOUT:
			s->timeout++;
			break;
		}
		s->restarts += j->restarts;
		s->fault_hits += j->fault_restarts;
		s->preemptions += j->preemptions;
		s->jobs_rerun += j->fault_restarts > 0;
		s->lost_fault_npu_h += j->lost_fault_npu_sec / 3600;
		s->lost_preempt_npu_h += j->lost_preempt_npu_sec / 3600;
		s->lost_abandoned_npu_h += j->lost_abandoned_npu_sec / 3600;
	}
	s->alloc_wait_pct = r->time_wait > 0 ? 100 * r->alloc_wait / (r->time_wait * total) : 0;
	s->used_wait_pct = r->time_wait > 0 ? 100 * r->used_wait / (r->time_wait * total) : 0;
	s->alloc_win_pct = r->time_win > 0 ? 100 * r->alloc_win / (r->time_win * total) : 0;
	s->used_win_pct = r->time_win > 0 ? 100 * r->used_win / (r->time_win * total) : 0;
	s->useful_pct = r->time_all > 0 ? 100 * r->useful_npu_sec / (r->time_all * total) : 0;
	s->tp_cross_pct = r->tp_groups ? 100.0 * (double)r->tp_cross / (double)r->tp_groups : 0;
	s->extra_switch_pct = r->multi_placements ? 100.0 * (double)r->multi_extra_switch /
							    (double)r->multi_placements :
						    0;
	s->avoidable_switch_pct = r->multi_placements ?
					  100.0 * (double)r->multi_extra_switch_avoidable /
						  (double)r->multi_placements :
					  0;
	s->step_factor = r->step_weight > 0 ? r->step_sum / r->step_weight : 1;
	s->roce_leaf_gb = r->roce_leaf_bytes / 1e9;
	s->roce_spine_gb = r->roce_spine_bytes / 1e9;
	s->makespan_sec = r->time_all;
	return delays(r, t, s);
}

/* "1.23x", "=" (both 0) or "-" (a ratio to 0): @num / @den into @buf. */
static void ratio_text(char *buf, size_t len, double num, double den)
{
	if (den != 0)
		snprintf(buf, len, "%.2fx", num / den);
	else if (num == 0)
		snprintf(buf, len, "=");
	else
		snprintf(buf, len, "-");
}

static void row(FILE *out, const char *what, const char *unit, double st, double as, double bl,
		int prec)
{
	char a[32], b[32], c[32], rt[16], rb[16];

	snprintf(a, sizeof(a), "%.*f%s", prec, st, unit);
	snprintf(b, sizeof(b), "%.*f%s", prec, as, unit);
	snprintf(c, sizeof(c), "%.*f%s", prec, bl, unit);
	ratio_text(rt, sizeof(rt), as, st);
	ratio_text(rb, sizeof(rb), as, bl);
	fprintf(out, "  %-52s %14s %14s %8s %14s %8s\n", what, a, b, rt, c, rb);
}

void sim_report_table(FILE *out, const struct sim_result *st, const struct sim_summary *ss,
		      const struct sim_result *as, const struct sim_summary *sa,
		      const struct sim_result *bl, const struct sim_summary *sb)
{
	double n = (double)(st->njobs ? st->njobs : 1);

	fprintf(out, "\n  %-52s %14s %14s %8s %14s %8s\n", "", "static", "ascendfs", "ratio",
		"blind", "ratio");
	fprintf(out, "  %-52s %14s %14s %8s %14s %8s\n", "", "(rank table)", "(this config)",
		"as/st", "(binpack)", "as/bl");
	row(out, "allocation: NPUs running jobs, while jobs wait", "%", ss->used_wait_pct,
	    sa->used_wait_pct, sb->used_wait_pct, 1);
	row(out, "  the same over the arrival window", "%", ss->used_win_pct, sa->used_win_pct,
	    sb->used_win_pct, 1);
	row(out, "NPUs held (static: whole servers), while jobs wait", "%", ss->alloc_wait_pct,
	    sa->alloc_wait_pct, sb->alloc_wait_pct, 1);
	row(out, "  the same over the arrival window", "%", ss->alloc_win_pct, sa->alloc_win_pct,
	    sb->alloc_win_pct, 1);
	row(out, "useful work (finished jobs) over the replay", "%", ss->useful_pct, sa->useful_pct,
	    sb->useful_pct, 1);
	row(out, "queueing delay, mean", " h", ss->wait_mean / 3600, sa->wait_mean / 3600,
	    sb->wait_mean / 3600, 2);
	row(out, "queueing delay, median", " h", ss->wait_median / 3600, sa->wait_median / 3600,
	    sb->wait_median / 3600, 2);
	row(out, "queueing delay, p99", " h", ss->wait_p99 / 3600, sa->wait_p99 / 3600,
	    sb->wait_p99 / 3600, 1);
	row(out, "queueing delay, longest", " h", ss->wait_max / 3600, sa->wait_max / 3600,
	    sb->wait_max / 3600, 1);
	row(out, "job completion time (JCT), mean", " h", ss->jct_mean / 3600, sa->jct_mean / 3600,
	    sb->jct_mean / 3600, 2);
	row(out, "JCT, median", " h", ss->jct_median / 3600, sa->jct_median / 3600,
	    sb->jct_median / 3600, 2);
	row(out, "JCT, p99", " h", ss->jct_p99 / 3600, sa->jct_p99 / 3600, sb->jct_p99 / 3600, 1);
	row(out, "JCT at the modelled step, mean", " h", ss->jct_step_mean / 3600,
	    sa->jct_step_mean / 3600, sb->jct_step_mean / 3600, 2);
	row(out, "JCT at the modelled step, p99", " h", ss->jct_step_p99 / 3600,
	    sa->jct_step_p99 / 3600, sb->jct_step_p99 / 3600, 1);
	row(out, "replay length (first arrival to last end)", " d", ss->makespan_sec / 86400,
	    sa->makespan_sec / 86400, sb->makespan_sec / 86400, 1);
	row(out, "tensor-parallel groups crossing servers", "%", ss->tp_cross_pct, sa->tp_cross_pct,
	    sb->tp_cross_pct, 2);
	row(out, "multi-server jobs on more leaf switches than needed", "%", ss->extra_switch_pct,
	    sa->extra_switch_pct, sb->extra_switch_pct, 1);
	row(out, "  than the servers free at that moment needed", "%", ss->avoidable_switch_pct,
	    sa->avoidable_switch_pct, sb->avoidable_switch_pct, 1);
	row(out, "modelled step / compute alone (NPU-time weighted)", "", ss->step_factor,
	    sa->step_factor, sb->step_factor, 3);
	row(out, "RoCE bytes per step, one leaf (sum over jobs)", " GB", ss->roce_leaf_gb,
	    sa->roce_leaf_gb, sb->roce_leaf_gb, 1);
	row(out, "RoCE bytes per step, through the spine", " GB", ss->roce_spine_gb,
	    sa->roce_spine_gb, sb->roce_spine_gb, 1);
	row(out, "NPU faults (one sequence, as long as each replay)", "", (double)st->faults,
	    (double)as->faults, (double)bl->faults, 0);
	row(out, "  that hit a running job", "", (double)st->faults_hit, (double)as->faults_hit,
	    (double)bl->faults_hit, 0);
	row(out, "restarts after faults", "", (double)ss->restarts, (double)sa->restarts,
	    (double)sb->restarts, 0);
	row(out, "  of them process-level (failed servers only)", "",
	    (double)st->process_recoveries, (double)as->process_recoveries,
	    (double)bl->process_recoveries, 0);
	row(out, "transient faults retried (no restart)", "", (double)st->retries,
	    (double)as->retries, (double)bl->retries, 0);
	row(out, "jobs rerun after faults", "%", 100.0 * (double)ss->jobs_rerun / n,
	    100.0 * (double)sa->jobs_rerun / n, 100.0 * (double)sb->jobs_rerun / n, 2);
	row(out, "NPU-hours lost to faults (work redone)", "", ss->lost_fault_npu_h,
	    sa->lost_fault_npu_h, sb->lost_fault_npu_h, 0);
	row(out, "worst loss per fault / (checkpoint + restart cost)", "", st->worst_loss_ratio,
	    as->worst_loss_ratio, bl->worst_loss_ratio, 2);
	row(out, "preemptions", "", (double)ss->preemptions, (double)sa->preemptions,
	    (double)sb->preemptions, 0);
	row(out, "NPU-hours lost to preemption", "", ss->lost_preempt_npu_h, sa->lost_preempt_npu_h,
	    sb->lost_preempt_npu_h, 0);
	row(out, "NPU-hours of jobs that failed or timed out", "", ss->lost_abandoned_npu_h,
	    sa->lost_abandoned_npu_h, sb->lost_abandoned_npu_h, 0);
	row(out, "jobs backfilled", "", 0, (double)as->backfilled, (double)bl->backfilled, 0);
	row(out, "jobs finished", "", (double)ss->done, (double)sa->done, (double)sb->done, 0);
	row(out, "jobs failed or timed out", "", (double)(ss->failed + ss->timeout),
	    (double)(sa->failed + sa->timeout), (double)(sb->failed + sb->timeout), 0);
	row(out, "jobs never started or left unfinished", "", (double)(ss->never + ss->unfinished),
	    (double)(sa->never + sa->unfinished), (double)(sb->never + sb->unfinished), 0);
	row(out, "most jobs waiting at once", "", st->max_pending, as->max_pending, bl->max_pending,
	    0);
	fprintf(out, "  %-52s %12.1f s %12.1f s %8s %12.1f s\n", "wall time of the replay",
		st->wall_sec, as->wall_sec, "", bl->wall_sec);
}

/* ---- files ---- */

static FILE *open_in(const char *dir, const char *name, char err[SIM_ERR_MAX])
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	if (!f)
		snprintf(err, SIM_ERR_MAX, "%.400s: %s", path, strerror(errno));
	return f;
}

static int close_in(FILE *f, const char *dir, const char *name, char err[SIM_ERR_MAX])
{
	if (fclose(f) != 0) {
		snprintf(err, SIM_ERR_MAX, "%.300s/%.40s: %s", dir, name, strerror(errno));
		return -EIO;
	}
	return 0;
}

/* The blind engine's columns come last, so that the first five stay as they were. */
static void csv_row(FILE *f, const char *metric, const char *unit, double st, double as,
		    double bl)
{
	fprintf(f, "%s,%s,%.6g,%.6g,", metric, unit, st, as);
	if (st != 0)
		fprintf(f, "%.6g", as / st);
	fprintf(f, ",%.6g,", bl);
	if (bl != 0)
		fprintf(f, "%.6g", as / bl);
	fprintf(f, "\n");
}

static int write_summary(const char *dir, const struct sim_result *st,
			 const struct sim_summary *ss, const struct sim_result *as,
			 const struct sim_summary *sa, const struct sim_result *bl,
			 const struct sim_summary *sb, char err[SIM_ERR_MAX])
{
	FILE *f = open_in(dir, "summary.csv", err);
	double n = (double)(st->njobs ? st->njobs : 1);

	if (!f)
		return -errno;
	fprintf(f, "metric,unit,static,ascendfs,ratio,blind,ratio_blind\n");
	csv_row(f, "allocation_while_waiting", "percent", ss->used_wait_pct, sa->used_wait_pct,
		sb->used_wait_pct);
	csv_row(f, "held_while_waiting", "percent", ss->alloc_wait_pct, sa->alloc_wait_pct,
		sb->alloc_wait_pct);
	csv_row(f, "allocation_arrival_window", "percent", ss->used_win_pct, sa->used_win_pct,
		sb->used_win_pct);
	csv_row(f, "held_arrival_window", "percent", ss->alloc_win_pct, sa->alloc_win_pct,
		sb->alloc_win_pct);
	csv_row(f, "useful_work", "percent", ss->useful_pct, sa->useful_pct, sb->useful_pct);
	csv_row(f, "queueing_mean", "seconds", ss->wait_mean, sa->wait_mean, sb->wait_mean);
	csv_row(f, "queueing_median", "seconds", ss->wait_median, sa->wait_median, sb->wait_median);
	csv_row(f, "queueing_p99", "seconds", ss->wait_p99, sa->wait_p99, sb->wait_p99);
	csv_row(f, "queueing_max", "seconds", ss->wait_max, sa->wait_max, sb->wait_max);
	csv_row(f, "jct_mean", "seconds", ss->jct_mean, sa->jct_mean, sb->jct_mean);
	csv_row(f, "jct_median", "seconds", ss->jct_median, sa->jct_median, sb->jct_median);
	csv_row(f, "jct_p99", "seconds", ss->jct_p99, sa->jct_p99, sb->jct_p99);
	csv_row(f, "jct_modelled_step_mean", "seconds", ss->jct_step_mean, sa->jct_step_mean,
		sb->jct_step_mean);
	csv_row(f, "jct_modelled_step_p99", "seconds", ss->jct_step_p99, sa->jct_step_p99,
		sb->jct_step_p99);
	csv_row(f, "makespan", "seconds", ss->makespan_sec, sa->makespan_sec, sb->makespan_sec);
	csv_row(f, "tp_groups_crossing_servers", "percent", ss->tp_cross_pct, sa->tp_cross_pct,
		sb->tp_cross_pct);
	csv_row(f, "tp_groups_crossing_avoidable", "count", (double)st->tp_cross_avoidable,
		(double)as->tp_cross_avoidable, (double)bl->tp_cross_avoidable);
	csv_row(f, "multi_server_extra_switch", "percent", ss->extra_switch_pct,
		sa->extra_switch_pct, sb->extra_switch_pct);
	csv_row(f, "multi_server_extra_switch_avoidable", "percent", ss->avoidable_switch_pct,
		sa->avoidable_switch_pct, sb->avoidable_switch_pct);
	csv_row(f, "step_time_over_compute", "factor", ss->step_factor, sa->step_factor,
		sb->step_factor);
	csv_row(f, "roce_leaf_bytes_per_step", "gigabytes", ss->roce_leaf_gb, sa->roce_leaf_gb,
		sb->roce_leaf_gb);
	csv_row(f, "roce_spine_bytes_per_step", "gigabytes", ss->roce_spine_gb, sa->roce_spine_gb,
		sb->roce_spine_gb);
	csv_row(f, "faults", "count", (double)st->faults, (double)as->faults, (double)bl->faults);
	csv_row(f, "faults_hit_running_job", "count", (double)st->faults_hit,
		(double)as->faults_hit, (double)bl->faults_hit);
	csv_row(f, "restarts_after_faults", "count", (double)ss->restarts, (double)sa->restarts,
		(double)sb->restarts);
	csv_row(f, "jobs_rerun_after_faults", "percent", 100.0 * (double)ss->jobs_rerun / n,
		100.0 * (double)sa->jobs_rerun / n, 100.0 * (double)sb->jobs_rerun / n);
	csv_row(f, "npu_hours_lost_faults", "npu_hours", ss->lost_fault_npu_h, sa->lost_fault_npu_h,
		sb->lost_fault_npu_h);
	csv_row(f, "worst_loss_over_checkpoint_bound", "factor", st->worst_loss_ratio,
		as->worst_loss_ratio, bl->worst_loss_ratio);
	csv_row(f, "interruptions_over_checkpoint_bound", "count",
		(double)st->interruptions_over_bound, (double)as->interruptions_over_bound,
		(double)bl->interruptions_over_bound);
	csv_row(f, "preemptions", "count", (double)ss->preemptions, (double)sa->preemptions,
		(double)sb->preemptions);
	csv_row(f, "npu_hours_lost_preemption", "npu_hours", ss->lost_preempt_npu_h,
		sa->lost_preempt_npu_h, sb->lost_preempt_npu_h);
	csv_row(f, "npu_hours_failed_or_timed_out", "npu_hours", ss->lost_abandoned_npu_h,
		sa->lost_abandoned_npu_h, sb->lost_abandoned_npu_h);
	csv_row(f, "backfilled", "count", 0, (double)as->backfilled, (double)bl->backfilled);
	csv_row(f, "jobs_finished", "count", (double)ss->done, (double)sa->done, (double)sb->done);
	csv_row(f, "jobs_failed", "count", (double)ss->failed, (double)sa->failed,
		(double)sb->failed);
	csv_row(f, "jobs_timed_out", "count", (double)ss->timeout, (double)sa->timeout,
		(double)sb->timeout);
	csv_row(f, "jobs_never_started", "count", (double)ss->never, (double)sa->never,
		(double)sb->never);
	csv_row(f, "jobs_unfinished", "count", (double)ss->unfinished, (double)sa->unfinished,
		(double)sb->unfinished);
	return close_in(f, dir, "summary.csv", err);
}

/* One engine's columns of utilization.csv for sample @b (@healthy: the healthy share
 * too); empty after its replay ended. */
static void series_cols(FILE *f, const struct sim_result *r, size_t b, bool healthy)
{
	const struct sim_bucket *x;
	double full;

	if (b >= r->nseries || !(r->buckets[b].span_sec > 0)) {
		fprintf(f, healthy ? ",,,,," : ",,,,");
		return;
	}
	x = &r->buckets[b];
	full = x->span_sec * r->npus_total;
	fprintf(f, ",%.2f,%.2f,%.1f,%.1f", 100 * x->alloc_npu_sec / full,
		100 * x->used_npu_sec / full, x->pending_sec / x->span_sec,
		x->running_sec / x->span_sec);
	if (healthy)
		fprintf(f, ",%.2f", 100 * x->healthy_npu_sec / full);
}

static int write_series(const char *dir, const struct sim_result *st, const struct sim_result *as,
			const struct sim_result *bl, const struct sim_options *o,
			char err[SIM_ERR_MAX])
{
	FILE *f = open_in(dir, "utilization.csv", err);
	size_t n = st->nseries > as->nseries ? st->nseries : as->nseries;

	if (bl->nseries > n)
		n = bl->nseries;
	double w = (double)o->sample_sec;

	if (!f)
		return -errno;
	fprintf(f, "hour,static_alloc_pct,static_used_pct,static_waiting,static_running,"
		   "ascendfs_alloc_pct,ascendfs_used_pct,ascendfs_waiting,ascendfs_running,"
		   "ascendfs_healthy_pct,blind_alloc_pct,blind_used_pct,blind_waiting,"
		   "blind_running\n");
	/* an engine's columns stay empty after its replay ended (gnuplot leaves a gap) */
	for (size_t b = 0; b < n; b++) {
		fprintf(f, "%.3f", (double)b * w / 3600);
		series_cols(f, st, b, false);
		series_cols(f, as, b, true);
		series_cols(f, bl, b, false);
		fprintf(f, "\n");
	}
	if (st->series_cut || as->series_cut || bl->series_cut)
		fprintf(f, "# the replay outlasted %d samples; a longer --sample covers it all\n",
			SIM_SERIES_MAX);
	return close_in(f, dir, "utilization.csv", err);
}

static const char *outcome_name(enum sim_outcome o)
{
	static const char *const names[] = { "never_started", "running", "completed", "failed",
					      "timeout" };

	return names[o];
}

static void job_cols(FILE *f, const struct sim_jobrec *j, uint64_t submit)
{
	if (j->first_start_sec == UINT64_MAX)
		fprintf(f, ",,");
	else
		fprintf(f, ",%llu,%llu", (unsigned long long)j->first_start_sec,
			(unsigned long long)(j->first_start_sec - submit));
	if (j->end_sec == UINT64_MAX)
		fprintf(f, ",");
	else
		fprintf(f, ",%llu", (unsigned long long)j->end_sec);
	fprintf(f, ",%s,%u,%u,%u,%.3f,%.3f,%u,%u", outcome_name(j->outcome), j->npus,
		j->fault_restarts, j->preemptions, j->lost_fault_npu_sec / 3600,
		j->lost_preempt_npu_sec / 3600, j->servers, j->switches);
}

static int write_jobs(const char *dir, const struct sim_trace *t, const struct sim_result *st,
		      const struct sim_result *as, const struct sim_result *bl,
		      const struct sim_options *o, char err[SIM_ERR_MAX])
{
	static const char cols[] = "start_sec,wait_sec,end_sec,outcome,npus,fault_interruptions,"
				   "preemptions,lost_fault_npu_h,lost_preempt_npu_h,servers,"
				   "switches";
	FILE *f = open_in(dir, "jobs.csv", err);
	char hdr[1024], *p = hdr;

	if (!f)
		return -errno;
	fprintf(f, "job,trace_line,queue,npus,priority,submit_sec,duration_sec");
	static const char *const engines[] = { "static", "ascendfs", "blind" };

	for (int k = 0; k < 3; k++) {
		const char *c = cols;

		while (*c) {
			const char *e = strchr(c, ',');
			size_t l = e ? (size_t)(e - c) : strlen(c);

			p += snprintf(p, sizeof(hdr) - (size_t)(p - hdr), ",%s_%.*s",
				      engines[k], (int)l, c);
			c += l + (e ? 1 : 0);
		}
	}
	/* the step model's columns last, so that the ones before stay as they were */
	fprintf(f, "%s,model,layout,compute_ms,static_step_ms,ascendfs_step_ms,blind_step_ms,"
		   "static_roce_leaf_mb,static_roce_spine_mb,ascendfs_roce_leaf_mb,"
		   "ascendfs_roce_spine_mb,blind_roce_leaf_mb,blind_roce_spine_mb",
		hdr);
	for (int k = 0; k < 3; k++)
		for (int d = 0; d < SCHED_DIM_COUNT; d++)
			fprintf(f, ",%s_%s_ms", engines[k], sched_dim_name((enum sched_dim)d));
	fprintf(f, "\n");
	for (size_t i = 0; i < t->n; i++) {
		const struct sim_tjob *tj = &t->jobs[i];
		const struct sim_jobrec *rec[3] = { &st->jobs[i], &as->jobs[i], &bl->jobs[i] };
		struct sched_parallel par;
		double compute = 0;

		fprintf(f, "j-%zu,%zu,%s,%u,%u,%llu,%llu", i, tj->line, t->queues[tj->queue],
			tj->npus, tj->priority, (unsigned long long)tj->submit_sec,
			(unsigned long long)tj->dur_sec);
		job_cols(f, &st->jobs[i], tj->submit_sec);
		job_cols(f, &as->jobs[i], tj->submit_sec);
		job_cols(f, &bl->jobs[i], tj->submit_sec);
		fprintf(f, ",%s,", sim_model_name(tj->model));
		if (sim_model_layout(tj, tj->npus, o, &par) == 0)
			fprintf(f, "tp%u-cp%u-ep%u-dp%u-pp%u", par.size[SCHED_DIM_TP],
				par.size[SCHED_DIM_CP], par.size[SCHED_DIM_EP],
				par.size[SCHED_DIM_DP], par.size[SCHED_DIM_PP]);
		for (int k = 0; k < 3; k++)
			if (rec[k]->compute_usec > 0)
				compute = rec[k]->compute_usec;
		if (compute > 0)
			fprintf(f, ",%.3f", compute / 1e3);
		else
			fprintf(f, ",");
		for (int k = 0; k < 3; k++)
			if (rec[k]->step_usec > 0)
				fprintf(f, ",%.3f", rec[k]->step_usec / 1e3);
			else
				fprintf(f, ",");
		for (int k = 0; k < 3; k++)
			if (rec[k]->step_usec > 0)
				fprintf(f, ",%.3f,%.3f", rec[k]->roce_leaf_bytes / 1e6,
					rec[k]->roce_spine_bytes / 1e6);
			else
				fprintf(f, ",,");
		for (int k = 0; k < 3; k++)
			for (int d = 0; d < SCHED_DIM_COUNT; d++)
				if (rec[k]->step_usec > 0)
					fprintf(f, ",%.3f", rec[k]->comm_usec[d] / 1e3);
				else
					fprintf(f, ",");
		fprintf(f, "\n");
	}
	return close_in(f, dir, "jobs.csv", err);
}

static int write_plot(const char *dir, const struct sim_trace *t, const struct sim_result *st,
		      const char *plot, char err[SIM_ERR_MAX])
{
	FILE *f = open_in(dir, "utilization.gp", err);
	bool png = plot && strcmp(plot, "png") == 0;

	if (!f)
		return -errno;
	fprintf(f, "# gnuplot script written by ascend-sim: run `gnuplot utilization.gp` here\n"
		   "set datafile separator ','\n");
	if (png)
		fprintf(f, "set terminal pngcairo size 1200,800 font 'sans,10'\n"
			   "set output 'utilization.png'\n");
	else
		fprintf(f, "set terminal svg size 1200,800 dynamic font 'sans,11'\n"
			   "set output 'utilization.svg'\n");
	fprintf(f, "set multiplot layout 2,1 title '%zu jobs on %u NPUs: ascendfs against the "
		   "static rank-table workflow'\n"
		   "set grid\nset key outside right top\n"
		   "set lmargin at screen 0.07\nset rmargin at screen 0.74\n"
		   "set ylabel 'NPUs (%% of all)'\nset yrange [0:105]\n"
		   "plot 'utilization.csv' using 1:6 with lines lw 1.5 lc rgb '#1f77b4' "
		   "title 'ascendfs: allocated', \\\n"
		   "     '' using 1:2 with lines lw 1.5 lc rgb '#d62728' title 'static: allocated "
		   "(whole servers)', \\\n"
		   "     '' using 1:3 with lines dt 2 lc rgb '#d62728' title 'static: asked for by "
		   "jobs', \\\n"
		   "     '' using 1:11 with lines lw 1 lc rgb '#ff7f0e' title 'blind: allocated', "
		   "\\\n"
		   "     '' using 1:10 with lines dt 3 lc rgb '#2ca02c' title 'healthy NPUs'\n"
		   "set xlabel 'hours since the first arrival'\nset ylabel 'jobs waiting'\n"
		   "set yrange [0:*]\n"
		   "plot 'utilization.csv' using 1:8 with lines lw 1.5 lc rgb '#1f77b4' "
		   "title 'ascendfs', \\\n"
		   "     '' using 1:4 with lines lw 1.5 lc rgb '#d62728' title 'static', \\\n"
		   "     '' using 1:13 with lines lw 1 lc rgb '#ff7f0e' title 'blind'\n"
		   "unset multiplot\n",
		t->n, st->npus_total);
	return close_in(f, dir, "utilization.gp", err);
}

/* Run gnuplot on utilization.gp in @dir. 1 when gnuplot is not installed. */
static int run_gnuplot(const char *dir, char err[SIM_ERR_MAX])
{
	posix_spawn_file_actions_t fa;
	char *argv[] = { "gnuplot", "utilization.gp", NULL };
	pid_t pid;
	int r, status;

	if (posix_spawn_file_actions_init(&fa) != 0)
		return -ENOMEM;
	posix_spawn_file_actions_addchdir_np(&fa, dir);
	r = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r == ENOENT) {
		snprintf(err, SIM_ERR_MAX,
			 "gnuplot is not installed: no figure (apt-get install gnuplot-nox, then run "
			 "`gnuplot utilization.gp` in %s)",
			 dir);
		return 1;
	}
	if (r != 0) {
		snprintf(err, SIM_ERR_MAX, "gnuplot: %s", strerror(r));
		return -r;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, SIM_ERR_MAX, "gnuplot failed on %s/utilization.gp (exit %d)", dir,
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return -EIO;
	}
	return 0;
}

int sim_report_files(const char *dir, const struct sim_trace *t, const struct sim_result *st,
		     const struct sim_summary *ss, const struct sim_result *as,
		     const struct sim_summary *sa, const struct sim_result *bl,
		     const struct sim_summary *sb, const struct sim_options *o, const char *plot,
		     char err[SIM_ERR_MAX])
{
	int r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, SIM_ERR_MAX, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	/* a figure of an earlier run must not sit next to these files */
	for (const char *const *old = (const char *const[]){ "utilization.svg", "utilization.png",
							     NULL };
	     *old; old++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", dir, *old);
		unlink(path);
	}
	if ((r = write_summary(dir, st, ss, as, sa, bl, sb, err)) < 0 ||
	    (r = write_series(dir, st, as, bl, o, err)) < 0 ||
	    (r = write_jobs(dir, t, st, as, bl, o, err)) < 0 ||
	    (r = write_plot(dir, t, st, plot, err)) < 0)
		return r;
	return plot ? run_gnuplot(dir, err) : 0;
}
