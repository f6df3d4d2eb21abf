/* SPDX-License-Identifier: MIT */
/*
 * The recovery ladder (issue 17). A fault walks the job's `recovery:` list in order
 * (conf_recovery.c names the strategies): a strategy that does not apply to this fault
 * is passed over with its reason, the first that applies is used, and when it fails
 * the next one is tried; the last rung, job-level, is sched_recover.c. Every step is an
 * event (SCHED_EV_RECOVERY) with its reason and time.
 *
 * dump, the dying-gasp checkpoint (MindCluster's "dump", MindIO TTP's end-of-life
 * save): the job goes recovering and keeps every NPU it holds; the processes that
 * survived the fault (those on servers that did not fail, the failed process left out)
 * go on running and are asked, through jobs/<id>/recovery, to save the step they
 * finished and answer `saved` into the job's ctl. Processes on failed servers are left
 * out of the agents' job lists, so they are stopped. When every surviving process has
 * answered, the newest saved checkpoint becomes the job's and job-level recovery
 * restarts it from there: the step in flight is all that is lost. The step falls back
 * to the next rung when recovery_timeout passes, when a process says it could not save
 * (`save-failed`), or when no surviving process is left to answer. It does not apply
 * when no process survived, when none of the surviving servers has an agent (nobody
 * would answer), or while the generation waits for its checkpoint scan (its processes
 * have not started).
 *
 * retry (MindCluster's online step retry): for a transient NPU fault, a Critical report
 * whose code is one of the cluster's retry_fault_codes (sched_health.c decides, and
 * keeps the NPU in service): every process of the job drops the step in flight, pauses
 * at the step boundary and answers `paused` with the last step it finished; then the
 * resume notice gives that step and they recompute the next. No process restarts, no
 * rank table changes, nothing is counted against max_restarts. It does not apply to
 * any other fault, and no other rung applies to a transient fault, wherever retry
 * stands in the ladder. It falls back when recovery_timeout passes, when a process exits
 * during the step (its crash is then the next rungs' fault), or when a server or NPU of
 * the job fails; a failed retry isolates the NPU (a lasting fault after all), and so
 * does sched_health.c when the NPU is still Critical well after the step.
 *
 * in-place (MindCluster's recover-in-place): for a process that exited (a task fault,
 * not a lost NPU or server), only that process starts again, on the same NPUs and in
 * the same generation: its server's share gets a new attempt number in
 * nodes/<server>/jobs, and that server's agent starts again what of the share exited.
 * The job goes recovering and keeps its NPUs; the surviving processes are asked to
 * pause at the step boundary and answer `paused` with the step they finished; the
 * restarted one answers `joined` once it is up. Then the job runs again: the recovery
 * file's next request ("resume") gives every process the newest step paused at, the
 * survivors go on from where they are and the restarted process takes the state of
 * that step from them (a framework's replicas; what train_demo simulates). Nothing is
 * lost, no healthy process restarts, no rank table changes. It counts against
 * max_restarts when it succeeds. It does not apply to a lost NPU or server, when
 * max_restarts is used up, when the failed process's server has no agent to start it
 * again or its NPUs are out of service, or when no process survived to hold the
 * state; it falls back when recovery_timeout passes, when the restarted process exits
 * again, or when a survivor exits or its server fails during the step. A later rung
 * leaves the restarted process out of those it asks (it holds no state).
 *
 * process (MindCluster's process-level rescheduling, "recover"): for a lost NPU or
 * server (or a process exit on a server under suspicion), whole free servers replace the
 * failed ones in their places, so every rank keeps its number, and the job gets a new
 * generation and rank table at once; the processes of the kept servers run on (their
 * shares say kept_from in nodes/<server>/jobs, and their agents carry the run over to the
 * new generation), those of the replacements start. The survivors are asked to pause at
 * the step boundary and rebuild their communicator from the new rank table, then answer
 * `paused` with the step they finished; the new processes answer `joined` once up. Then
 * the job runs again and the resume notice gives the step to go on from, the new
 * processes taking its state from the survivors. Rank 0's server is not special: its
 * replacement becomes the rank table's first server, and the recovery file names the new
 * master address. It counts against max_restarts when it succeeds. It does not apply to
 * a process that exited on a server in service (in-place's), to a job that is not made of
 * whole servers or has none left, when no whole free server with an agent can take a
 * failed one's place (clean ones first, as job-level's), while a preemption waits for free servers, or when no
 * process survived; it falls back when recovery_timeout passes, when a process of the
 * step exits, or when another fault comes during it. A later rung leaves the processes
 * it started out of those it asks (they hold no state), and no dump follows when kept
 * processes had not answered (they are still of the older generation and ignore the
 * new one's requests). After an earlier rung, a server whose process exited and was not
 * started again is replaced too (nothing runs there to carry over); kept processes that
 * had finished with status 0 stay finished in the new generation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

static uint64_t elapsed(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

/*
 * A step's progress changed (an answer, a process gone): the job's files, its record in
 * the store and the cluster's views follow the cluster's version, not the job's alone.
 */
static void step_changed(struct sched_cluster *c, struct sched_job *j)
{
	sched_job_touch(c, j);
	sched_cluster_changed(c);
}

void sched_ladder_free(struct sched_ladder *l)
{
	free(l->why);
	free(l->waited);
	free(l->answered);
	free(l->joining);
	free(l->saved_path);
	free(l->outcome);
	memset(l, 0, sizeof(*l));
	l->fault_server = -1;
	l->restarted = -1;
}

/* End the step in progress: what it owned goes, the request number and outcome stay. */
static void step_end(struct sched_cluster *c, struct sched_job *j)
{
	struct sched_ladder *l = &j->ladder;

	if (l->counted)
		c->ladder_active--;
	l->active = l->counted = false;
	free(l->waited);
	free(l->answered);
	free(l->joining);
	free(l->saved_path);
	l->waited = l->answered = l->joining = NULL;
	l->saved_path = NULL;
	l->process_count = l->waited_count = l->answered_count = 0;
	l->saved_step = 0;
	l->restarted = -1;
	l->joined = false;
}

void sched_ladder_release(struct sched_cluster *c, struct sched_job *j)
{
	step_end(c, j);
}

static void set_outcome(struct sched_ladder *l, const char *text)
{
	char *copy = strdup(text);

	if (!copy)
		return; /* the file then shows the older outcome; nothing else depends on it */
	free(l->outcome);
	l->outcome = copy;
}

/*
 * A step began: running @j goes recovering with @reason; one already recovering (a
 * fallback from the step before) keeps its state, and the step is an event of its own.
 */
static void step_began(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       const char *reason)
{
	if (j->state != SCHED_JOB_RECOVERING) {
		sched_job_transition(c, j, SCHED_JOB_RECOVERING, SCHED_EV_RECOVERING, now_usec,
				     reason);
		return;
	}
	sched_job_set_reason(c, j, reason);
	j->change_usec = now_usec;
	sched_event_add(c, now_usec, SCHED_EV_RECOVERY, j, NULL, -1, "%s", reason);
	step_changed(c, j);
}

/* "dump, job": the job's ladder, for reasons. */
static void ladder_text(const struct sched_job *j, char *buf, size_t len)
{
	conf_recovery_list_text(j->spec->recovery, j->spec->recovery_count, buf, len);
}

/*
 * Has process @idx of @j survived the fault the ladder holds (or @failed, -1)? Not when
 * it exited (a fault's own process, one that finished with status 0, one that exited
 * during a step) or its server failed, nor when a process step that started it fell
 * back (it holds no state).
 */
static bool survives(const struct sched_cluster *c, const struct sched_job *j, size_t idx,
		     long failed)
{
	const struct sched_slice *sl = &j->slices[sched_job_process_slice(j, idx)];

	return (long)idx != failed && !sched_job_process_exited(j, idx) &&
	       !sched_slice_is_bad(c, sl) && !(j->ladder.joiners_stateless && !sl->kept_from) &&
	       !(j->ladder.fault_server >= 0 && !j->ladder.process_fault &&
		 sl->server == (unsigned)j->ladder.fault_server);
}

/*
 * Run job-level recovery for the fault the ladder holds; the step in progress, if any,
 * ends first. @note is added to the fault's sentence ("" for none).
 */
static void job_level(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		      const char *note)
{
	struct sched_ladder *l = &j->ladder;
	char why[SCHED_REASON_MAX];
	bool process_fault = l->process_fault;
	int server = l->fault_server;

	snprintf(why, sizeof(why), "%.300s%.150s", l->why ? l->why : "a fault", note);
	step_end(c, j);
	if (process_fault)
		sched_restart_job_level(c, j, now_usec, why, server);
	else
		sched_recover_job_level(c, j, now_usec, why, server);
}

/* Has running @j used up its time_limit (a save would outlive it)? */
static bool limit_spent(const struct sched_job *j, uint64_t now_usec)
{
	return j->spec->time_limit_sec &&
	       sched_job_run_usec(j, now_usec) >= j->spec->time_limit_sec * 1000000u;
}

/*
 * Has @j no budget left for a rung that counts as a restart (@rung's name): max_restarts
 * used up, or its time_limit (the step would outlive it)? Then @skip says which.
 */
static bool budget_spent(const struct sched_job *j, uint64_t now_usec, const char *rung,
			 char *skip, size_t skip_len)
{
	if (j->restarts >= j->spec->max_restarts)
		snprintf(skip, skip_len, "%s: max_restarts (%u) is used up", rung,
			 j->spec->max_restarts);
	else if (limit_spent(j, now_usec))
		snprintf(skip, skip_len, "%s: the job's time_limit is used up", rung);
	else
		return false;
	return true;
}

/*
 * A step of @strategy opens: a new request, its deadline, the processes it waits for
 * (@w, @a: owned from here, @count entries, @waited of them true in @w).
 */
static void step_open(struct sched_cluster *c, struct sched_job *j, enum conf_recovery strategy,
		      uint64_t now_usec, bool *w, bool *a, size_t count, size_t waited)
{
	struct sched_ladder *l = &j->ladder;

	l->active = l->counted = true;
	c->ladder_active++;
	l->request++;
	l->resumed = false;
	l->strategy = strategy;
	l->began_usec = now_usec;
	l->deadline_usec = now_usec + (uint64_t)c->conf->recovery_timeout_sec * 1000000u;
	l->waited = w;
	l->answered = a;
	l->process_count = count;
	l->waited_count = waited;
	l->answered_count = 0;
	l->saved_step = 0;
}

/*
 * Begin a dump step for @j (running). Returns 1 when it began, 0 when it does not apply
 * (@skip says why), -ENOMEM.
 */
static int dump_begin(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		      long failed, char *skip, size_t skip_len)
{
	struct sched_ladder *l = &j->ladder;
	size_t count = sched_job_process_count(j), waited = 0, servers = 0;
	char reason[SCHED_REASON_MAX], list[64];
	bool survivor = false;
	bool *w, *a;

	if (j->resume_scan_pending || !j->slice_count) {
		snprintf(skip, skip_len, "dump: the generation's processes have not started");
		return 0;
	}
	if (l->kept_unanswered) {
		snprintf(skip, skip_len, "dump: kept processes did not rebuild into generation %u "
			 "and would not answer its request", j->generation);
		return 0;
	}
	w = calloc(count ? count : 1, sizeof(*w));
	a = calloc(count ? count : 1, sizeof(*a));
	if (!w || !a) {
		free(w);
		free(a);
		return -ENOMEM;
	}
	/* a survivor on a server without an agent: nothing runs there to answer */
	for (size_t i = 0; i < count; i++)
		if (survives(c, j, i, failed)) {
			size_t k = sched_job_process_slice(j, i);

			survivor = true;
			if (c->servers[j->slices[k].server].last_report_usec) {
				w[i] = true;
				waited++;
			}
		}
	for (size_t i = 0; i < j->slice_count; i++)
		servers += !sched_slice_is_bad(c, &j->slices[i]);
	if (!waited || limit_spent(j, now_usec)) {
		free(w);
		free(a);
		snprintf(skip, skip_len, "%s",
			 !survivor ? "dump: no process survived the fault" :
			 !waited ? "dump: no surviving server has an agent to run its processes" :
				   "dump: the job's time_limit is used up");
		return 0;
	}
	step_open(c, j, CONF_RECOVERY_DUMP, now_usec, w, a, count, waited);
	ladder_text(j, list, sizeof(list));
	snprintf(reason, sizeof(reason),
		 "%.200s; dump (recovery [%s]): %zu surviving %s on %zu %s the step %s "
		 "finished (request %u of jobs/%s/recovery), within %u s",
		 l->why, list, waited, waited == 1 ? "process" : "processes", servers,
		 servers == 1 ? "server saves" : "servers save", waited == 1 ? "it" : "they",
		 l->request, j->name,
		 c->conf->recovery_timeout_sec);
	step_began(c, j, now_usec, reason);
	return 1;
}

/* "the process on a2-node-02" or "rank 5 on a2-node-02": process @idx of @j. */
static void process_label(const struct sched_cluster *c, const struct sched_job *j, size_t idx,
			  char *buf, size_t len)
{
	const struct sched_slice *sl = &j->slices[sched_job_process_slice(j, idx)];
	const char *server = c->servers[sl->server].conf->name;

	if (j->spec->launch == CONF_LAUNCH_PER_RANK)
		snprintf(buf, len, "rank %zu on %s", idx, server);
	else
		snprintf(buf, len, "the process on %s", server);
}

/*
 * Begin an in-place step for @j (running) after process @failed exited. Returns 1 when
 * it began, 0 when it does not apply (@skip says why), -ENOMEM.
 */
static int in_place_begin(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			  long failed, char *skip, size_t skip_len)
{
	struct sched_ladder *l = &j->ladder;
	size_t count = sched_job_process_count(j), waited = 0;
	char reason[SCHED_REASON_MAX], list[64], who[CONF_NAME_MAX + 32];
	struct sched_slice *sl;
	bool *w, *a;

	if (!l->process_fault || failed < 0 || (size_t)failed >= count) {
		snprintf(skip, skip_len, "in-place: not a process's exit (a lost NPU or server "
			 "moves the job off it)");
		return 0;
	}
	if (j->resume_scan_pending || !j->slice_count) {
		snprintf(skip, skip_len, "in-place: the generation's processes have not started");
		return 0;
	}
	sl = &j->slices[sched_job_process_slice(j, (size_t)failed)];
	if (sched_slice_is_bad(c, sl) ||
	    sched_server_is_suspect(c, &c->servers[sl->server], now_usec)) {
		snprintf(skip, skip_len, "in-place: %s is out of service or under suspicion",
			 c->servers[sl->server].conf->name);
		return 0;
	}
	if (!c->servers[sl->server].last_report_usec) {
		snprintf(skip, skip_len, "in-place: %s has no agent to start the process again",
			 c->servers[sl->server].conf->name);
		return 0;
	}
	if (budget_spent(j, now_usec, "in-place", skip, skip_len))
		return 0;
	w = calloc(count, sizeof(*w));
	a = calloc(count, sizeof(*a));
	if (!w || !a) {
		free(w);
		free(a);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++)
		if (survives(c, j, i, failed) &&
		    c->servers[j->slices[sched_job_process_slice(j, i)].server].last_report_usec) {
			w[i] = true;
			waited++;
		}
	if (!waited) {
		free(w);
		free(a);
		snprintf(skip, skip_len, "in-place: no process survived to hold the job's state");
		return 0;
	}
	step_open(c, j, CONF_RECOVERY_IN_PLACE, now_usec, w, a, count, waited);
	l->restarted = failed;
	l->joined = false;
	/* its agent starts again what of the share exited */
	sl->attempt++;
	process_label(c, j, (size_t)failed, who, sizeof(who));
	ladder_text(j, list, sizeof(list));
	snprintf(reason, sizeof(reason),
		 "%.120s; in-place (recovery [%.40s]): %.80s restarts on its NPUs "
		 "(attempt %u); %zu surviving %s at the step boundary (request %u of "
		 "jobs/%.64s/recovery), within %u s",
		 l->why, list, who, sl->attempt, waited, waited == 1 ? "process pauses" :
		 "processes pause", l->request, j->name, c->conf->recovery_timeout_sec);
	step_began(c, j, now_usec, reason);
	return 1;
}

/* Failed servers a process step replaces, at most: a bigger job goes to later rungs. */
#define PROCESS_SERVERS_MAX 4096

/*
 * Which of @j's slices the fault took (into @bad, j->slice_count entries); returns their
 * number. A process exit counts its server only when that server is under suspicion.
 * After an earlier rung (not a process's own fault), a server whose process @failed, or
 * any process that exited non-zero and was not started again, is replaced too: what
 * runs there cannot be carried into the new generation.
 */
static size_t failed_slices(const struct sched_cluster *c, const struct sched_job *j,
			    uint64_t now_usec, long failed, bool *bad)
{
	const struct sched_ladder *l = &j->ladder;
	size_t n = 0, count = sched_job_process_count(j);

	for (size_t i = 0; i < j->slice_count; i++) {
		unsigned s = j->slices[i].server;

		bad[i] = sched_slice_is_bad(c, &j->slices[i]) ||
			 (l->fault_server >= 0 && s == (unsigned)l->fault_server &&
			  (!l->process_fault || sched_server_is_suspect(c, &c->servers[s], now_usec)));
	}
	for (size_t i = 0; !l->process_fault && i < count; i++)
		if ((long)i == failed ||
		    (j->exits_generation == j->generation && i < j->exited_count && j->exited_bad &&
		     j->exited_bad[i]))
			bad[sched_job_process_slice(j, i)] = true;
	for (size_t i = 0; i < j->slice_count; i++)
		n += bad[i];
	return n;
}

/*
 * The replacements of sched_replace()'s @repl (@rcount, topology order) put in the
 * places of @j's @bad slices, so that every kept slice keeps its ranks: a new array of
 * j->slice_count (free()), NULL without memory. The replacement servers are those of
 * @repl that @j does not hold.
 */
static struct sched_slice *replace_in_place(const struct sched_job *j, const bool *bad,
					    const struct sched_slice *repl, size_t rcount)
{
	struct sched_slice *out = malloc(j->slice_count * sizeof(*out));
	size_t next = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < j->slice_count; i++) {
		out[i] = j->slices[i];
		if (!bad[i])
			continue;
		for (; next < rcount; next++) {
			bool held = false;

			for (size_t k = 0; k < j->slice_count && !held; k++)
				held = j->slices[k].server == repl[next].server;
			if (!held)
				break;
		}
		if (next == rcount) { /* sched_replace() found one for each: not reached */
			free(out);
			return NULL;
		}
		/* a whole server of the same type: same NPU count, same first rank */
		out[i].server = repl[next].server;
		memcpy(out[i].device_ids, repl[next].device_ids, sizeof(out[i].device_ids));
		out[i].attempt = 0;
		out[i].kept_from = 0;
		out[i].gone = false;
		next++;
	}
	return out;
}

/* "a2-node-02, a2-node-03": the servers of @j's slices whose @pick entry is true. */
static void slice_names(const struct sched_cluster *c, const struct sched_slice *slices,
			size_t count, const bool *pick, bool want, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < count && used + 1 < len; i++) {
		int n;

		if (pick[i] != want)
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
			     c->servers[slices[i].server].conf->name);
		if (n < 0)
			break;
		used += (size_t)n < len - used ? (size_t)n : len - used - 1;
	}
}

/*
 * Begin a process step for @j (running): whole free servers replace its failed ones,
 * a new generation at once. Returns 1 when it began, 0 when it does not apply (@skip
 * says why), -ENOMEM.
 */
static int process_begin(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			 long failed, char *skip, size_t skip_len)
{
	struct sched_ladder *l = &j->ladder;
	size_t n = j->slice_count, count = sched_job_process_count(j), nbad, waited = 0,
	       joiners = 0, rcount = 0;
	char reason[SCHED_REASON_MAX], list[64], gone[160], now_on[160];
	struct sched_slice *repl = NULL, *slices;
	bool bad[PROCESS_SERVERS_MAX];
	unsigned old_generation = j->generation, first_server;
	bool *w, *a, *jn, *finished = NULL;
	int r;

	if (j->resume_scan_pending || !n) {
		snprintf(skip, skip_len, "process: the generation's processes have not started");
		return 0;
	}
	if (n > PROCESS_SERVERS_MAX) {
		snprintf(skip, skip_len, "process: the job has more than %d servers",
			 PROCESS_SERVERS_MAX);
		return 0;
	}
	nbad = failed_slices(c, j, now_usec, failed, bad);
	if (l->process_fault && !nbad) {
		snprintf(skip, skip_len, "process: a process exited on a server in service "
			 "(in-place restarts it there)");
		return 0;
	}
	if (!nbad || nbad == n) {
		snprintf(skip, skip_len, "%s", nbad ? "process: none of the job's servers survived "
			 "the fault" : "process: none of the job's servers is out of service");
		return 0;
	}
	if (budget_spent(j, now_usec, "process", skip, skip_len))
		return 0;
	for (size_t i = 0; i < count; i++) {
		size_t k = sched_job_process_slice(j, i);

		if (!bad[k] && survives(c, j, i, failed) &&
		    c->servers[j->slices[k].server].last_report_usec)
			waited++;
	}
	if (!waited) {
		snprintf(skip, skip_len, "process: no process survived to hold the job's state");
		return 0;
	}
	if (sched_recover_preemption_waits(c, j)) {
		snprintf(skip, skip_len, "process: a preemption waits for free servers");
		return 0;
	}
	sched_place_begin(c, now_usec);
	r = sched_replace(c, j, bad, &repl, &rcount);
	if (r == -ENOMEM)
		return r;
	slice_names(c, j->slices, n, bad, true, gone, sizeof(gone));
	if (r < 0) {
		snprintf(skip, skip_len, "process: no whole free %s server can take the place of "
			 "%.80s", c->servers[j->slices[0].server].conf->type->name, gone);
		return 0;
	}
	slices = replace_in_place(j, bad, repl, rcount);
	free(repl);
	if (!slices)
		return -ENOMEM;
	/* (a server under suspicion is taken when no clean one is free, as job-level
	 * recovery would take it: sched_replace() prefers clean ones) */
	for (size_t i = 0; i < n; i++) {
		const struct sched_server *s = &c->servers[slices[i].server];

		if (bad[i] && !s->last_report_usec) {
			snprintf(skip, skip_len, "process: the free server %s that would take the "
				 "place of %s has no agent to start the processes", s->conf->name,
				 c->servers[j->slices[i].server].conf->name);
			free(slices);
			return 0;
		}
	}
	w = calloc(count, sizeof(*w));
	a = calloc(count, sizeof(*a));
	jn = calloc(count, sizeof(*jn));
	if (!w || !a || !jn) {
		free(w);
		free(a);
		free(jn);
		free(slices);
		return -ENOMEM;
	}
	waited = 0;
	for (size_t i = 0; i < count; i++) {
		size_t k = sched_job_process_slice(j, i);

		if (bad[k]) {
			jn[i] = w[i] = true; /* starts on the replacement */
			joiners++;
		} else if (survives(c, j, i, failed) &&
			   c->servers[j->slices[k].server].last_report_usec) {
			w[i] = true;
			waited++;
		}
	}
	slice_names(c, slices, n, bad, true, now_on, sizeof(now_on));

	/* the step opens on the old generation (its history record ends with the fault) */
	step_open(c, j, CONF_RECOVERY_PROCESS, now_usec, w, a, count, waited + joiners);
	l->joining = jn;
	l->joiners_stateless = false;
	ladder_text(j, list, sizeof(list));
	snprintf(reason, sizeof(reason),
		 "%.100s; process (recovery [%.40s]): %zu %s of %.60s start%s on %.60s "
		 "(generation %u); %zu surviving %s and rebuild%s (request %u of "
		 "jobs/%.48s/recovery), within %u s",
		 l->why, list, joiners, joiners == 1 ? "process" : "processes", gone,
		 joiners == 1 ? "s" : "", now_on, old_generation + 1, waited,
		 waited == 1 ? "process pauses" : "processes pause", waited == 1 ? "s" : "",
		 l->request, j->name, c->conf->recovery_timeout_sec);
	step_began(c, j, now_usec, reason);

	/* the exits known of kept processes: those that finished stay finished */
	if (j->exits_generation == j->generation && j->exited_count == count && j->exited_ok) {
		finished = malloc(count * sizeof(*finished));
		if (finished)
			memcpy(finished, j->exited_ok, count * sizeof(*finished));
	}
	/* the new generation: replacements in the failed servers' places, ranks kept */
	first_server = j->slices[0].server;
	sched_alloc_release(c, j);
	sched_alloc_apply(c, j, slices, n);
	if (j->slices[0].server != first_server)
		j->sched_port = sched_pick_port(c, j, j->slices[0].server);
	{
		unsigned kept[PROCESS_SERVERS_MAX];

		for (size_t i = 0; i < n; i++)
			kept[i] = bad[i] ? 0 : slices[i].kept_from ? slices[i].kept_from :
								      old_generation;
		sched_job_begin_generation(c, j, now_usec);
		for (size_t i = 0; i < n; i++)
			j->slices[i].kept_from = kept[i];
	}
	(void)sched_job_keep_finished(j, finished, bad);
	free(finished);
	/* nothing loads a checkpoint: the new processes take the survivors' state */
	sched_job_set_resume_scan_pending(c, j, false);
	/* the fault's exit was the old generation's */
	l->process_fault = false;
	l->fault_server = -1;
	step_changed(c, j);
	return 1;
}

/*
 * The processes a retry step asks: every process of @j that has not exited, on a server
 * with an agent (into @w, true when asked, sched_job_process_count() entries, or NULL to
 * count only). Returns their number.
 */
static size_t retry_asks(const struct sched_cluster *c, const struct sched_job *j, bool *w)
{
	size_t count = sched_job_process_count(j), n = 0;

	for (size_t i = 0; i < count; i++) {
		const struct sched_slice *sl = &j->slices[sched_job_process_slice(j, i)];
		bool asked = !sched_job_process_exited(j, i) && !sched_slice_is_bad(c, sl) &&
			     c->servers[sl->server].last_report_usec;

		if (w)
			w[i] = asked;
		n += asked;
	}
	return n;
}

bool sched_job_retry_applies(const struct sched_cluster *c, const struct sched_job *j,
			     char *why, size_t why_len)
{
	bool named = false;

	for (size_t k = 0; j->spec && k < j->spec->recovery_count; k++)
		named |= j->spec->recovery[k] == CONF_RECOVERY_RETRY;
	if (j->state != SCHED_JOB_RUNNING)
		snprintf(why, why_len, "job %s is %s, not running", j->name,
			 sched_job_state_name(j->state));
	else if (!named)
		snprintf(why, why_len, "the recovery of job %s does not name retry", j->name);
	else if (!c->conf->enable_fault_recovery ||
		 !(c->conf->recovery_allowed & (1u << CONF_RECOVERY_RETRY)))
		snprintf(why, why_len, "retry is not allowed by recovery_strategies");
	else if (j->resume_scan_pending || !j->slice_count)
		snprintf(why, why_len, "the processes of job %s have not started", j->name);
	else if (!retry_asks(c, j, NULL))
		snprintf(why, why_len, "no process of job %s runs on a server with an agent",
			 j->name);
	else
		return true;
	return false;
}

/*
 * Begin a retry step for @j (running) after a transient NPU fault. Returns 1 when it
 * began, 0 when it does not apply (@skip says why), -ENOMEM.
 */
static int retry_begin(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       char *skip, size_t skip_len)
{
	struct sched_ladder *l = &j->ladder;
	size_t count = sched_job_process_count(j), waited;
	char reason[SCHED_REASON_MAX], list[64], why[160];
	bool *w, *a;

	if (!l->transient) {
		snprintf(skip, skip_len, "retry: not a transient NPU fault (its code is not in "
			 "retry_fault_codes)");
		return 0;
	}
	if (!sched_job_retry_applies(c, j, why, sizeof(why))) {
		snprintf(skip, skip_len, "retry: %.140s", why);
		return 0;
	}
	w = calloc(count, sizeof(*w));
	a = calloc(count, sizeof(*a));
	if (!w || !a) {
		free(w);
		free(a);
		return -ENOMEM;
	}
	waited = retry_asks(c, j, w);
	step_open(c, j, CONF_RECOVERY_RETRY, now_usec, w, a, count, waited);
	ladder_text(j, list, sizeof(list));
	snprintf(reason, sizeof(reason),
		 "%.150s; retry (recovery [%.40s]): the NPU stays in service and %zu %s the "
		 "step in flight, pause%s at the step boundary and recompute%s it (request %u "
		 "of jobs/%.64s/recovery), within %u s",
		 l->why, list, waited, waited == 1 ? "process drops" : "processes drop",
		 waited == 1 ? "s" : "", waited == 1 ? "s" : "", l->request, j->name,
		 c->conf->recovery_timeout_sec);
	step_began(c, j, now_usec, reason);
	return 1;
}

/* Fail @j: no rung of its ladder is left. */
static void ladder_spent(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			 const char *skipped)
{
	char reason[SCHED_REASON_MAX], list[64];

	ladder_text(j, list, sizeof(list));
	snprintf(reason, sizeof(reason),
		 "%.180s; no strategy of recovery [%s] is left (%.120s); add job to the "
		 "spec's recovery list to restart from the newest checkpoint",
		 j->ladder.why ? j->ladder.why : "a fault", list, skipped);
	step_end(c, j);
	sched_job_fail_stop(c, j, now_usec, reason);
}

/* Walk @j's ladder from rung @from for the fault it holds; @failed as in survives(). */
static void walk(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec, size_t from,
		 long failed)
{
	struct sched_ladder *l = &j->ladder;
	char skipped[SCHED_REASON_MAX] = "";

	if (!j->spec->recovery_count) {
		/* a spec a program built without a ladder: job-level, as before the ladder */
		job_level(c, j, now_usec, "");
		return;
	}

	for (size_t k = from; k < j->spec->recovery_count; k++) {
		enum conf_recovery s = j->spec->recovery[k];
		char skip[256];
		int r;

		l->rung = k;
		l->strategy = s;
		if (l->transient && s != CONF_RECOVERY_RETRY) {
			/* the NPU stays in service: only retry is for it (sched_health.c
			 * asked sched_job_retry_applies() first) */
			snprintf(skip, sizeof(skip), "%s: a transient fault is retry's",
				 conf_recovery_name(s));
		} else if (!(c->conf->recovery_allowed & (1u << s))) {
			snprintf(skip, sizeof(skip), "%s: not allowed by recovery_strategies",
				 conf_recovery_name(s));
		} else if (s == CONF_RECOVERY_JOB) {
			if (skipped[0])
				sched_event_add(c, now_usec, SCHED_EV_RECOVERY, j, NULL, -1,
						"job-level recovery (passed over: %s)", skipped);
			job_level(c, j, now_usec, "");
			return;
		} else if ((r = s == CONF_RECOVERY_RETRY ?
				 retry_begin(c, j, now_usec, skip, sizeof(skip)) :
				 s == CONF_RECOVERY_IN_PLACE ?
				 in_place_begin(c, j, now_usec, failed, skip, sizeof(skip)) :
				 s == CONF_RECOVERY_PROCESS ?
				 process_begin(c, j, now_usec, failed, skip, sizeof(skip)) :
				 dump_begin(c, j, now_usec, failed, skip, sizeof(skip))) != 0) {
			if (r > 0) {
				if (skipped[0])
					sched_event_add(c, now_usec, SCHED_EV_RECOVERY, j, NULL,
							-1, "%s (passed over: %s)",
							conf_recovery_name(s), skipped);
				return;
			}
			snprintf(skip, sizeof(skip), "%s: out of memory", conf_recovery_name(s));
		}
		snprintf(skipped + strlen(skipped), sizeof(skipped) - strlen(skipped), "%s%s",
			 skipped[0] ? "; " : "", skip);
	}
	ladder_spent(c, j, now_usec, skipped[0] ? skipped : "none applies");
}

/* Start the ladder for a fault of running @j. */
static void fault(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		  const char *why, bool process_fault, bool transient, int server, long failed)
{
	struct sched_ladder *l = &j->ladder;
	char *copy;

	if (!c->conf->enable_fault_recovery || !j->spec) {
		/* job-level says what happens then (the job fails) */
		if (process_fault)
			sched_restart_job_level(c, j, now_usec, why, server);
		else
			sched_recover_job_level(c, j, now_usec, why, server);
		return;
	}
	copy = strdup(why);
	if (!copy) {
		/* no memory for the ladder: today's behaviour, which needs none of it */
		if (process_fault)
			sched_restart_job_level(c, j, now_usec, why, server);
		else
			sched_recover_job_level(c, j, now_usec, why, server);
		return;
	}
	free(l->why);
	l->why = copy;
	l->process_fault = process_fault;
	l->transient = transient;
	l->kept_unanswered = false;
	l->fault_server = server;
	walk(c, j, now_usec, 0, failed);
	/* a later fallback walks for a fault that is no longer taken for transient */
	l->transient = false;
}

/* The step in progress has nobody left to wait for: done, or fall back. */
static void step_settle(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec);

/*
 * A retry step failed (@what): the NPUs of @j whose transient fault it handled are
 * taken for a lasting fault and isolated, so the next rungs move the job off them.
 */
static void retry_failed(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			 const char *what)
{
	for (size_t k = 0; k < j->slice_count; k++) {
		struct sched_server *s = &c->servers[j->slices[k].server];
		bool changed = false;

		for (unsigned d = 0; d < j->slices[k].npu_count; d++) {
			struct sched_npu *n = &s->npus[j->slices[k].device_ids[d]];

			if (!n->retry_pending || n->isolated)
				continue;
			n->retry_pending = false;
			n->last_fault_usec = now_usec;
			n->ok_since_usec = 0;
			sched_npu_set_isolation(n, SCHED_ISOLATION_FAULT);
			sched_event_add(c, now_usec, SCHED_EV_HEALTH, NULL, s->conf->name,
					(int)n->device_id, "%s: isolated: the retry of job %s failed "
					"(%.200s)", n->fault, j->name, what);
			changed = true;
		}
		if (changed) {
			sched_server_recount(s);
			sched_cluster_changed(c);
		}
	}
}

/*
 * The step in progress failed (@what): walk on from the next rung; @failed is the process
 * of the step that exited (-1: none), which the next rungs treat as the fault's own.
 */
static void fall_back_from(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
			   const char *what, long failed)
{
	struct sched_ladder *l = &j->ladder;
	size_t next = l->rung + 1;
	bool stateless = l->strategy == CONF_RECOVERY_PROCESS, unanswered = false;

	/* a process restarted in place holds no state: a later rung does not ask it */
	if (l->strategy == CONF_RECOVERY_IN_PLACE)
		failed = l->restarted;
	/* kept processes that did not rebuild are still of the older generation */
	for (size_t i = 0; stateless && l->joining && i < l->process_count; i++)
		unanswered |= l->waited[i] && !l->joining[i];
	/* a failed retry: the NPU's fault is a lasting one after all */
	if (l->strategy == CONF_RECOVERY_RETRY)
		retry_failed(c, j, now_usec, what);

	set_outcome(l, what);
	sched_event_add(c, now_usec, SCHED_EV_RECOVERY, j, NULL, -1, "%s; falling back to %s", what,
			next < j->spec->recovery_count ?
				conf_recovery_name(j->spec->recovery[next]) : "nothing");
	step_end(c, j);
	/* nor those a process step started (survives()) */
	l->joiners_stateless = stateless;
	l->kept_unanswered = unanswered;
	if (next >= j->spec->recovery_count) {
		ladder_spent(c, j, now_usec, what);
		return;
	}
	/* the fault's own process is not among those a later rung asks (a dump's
	 * survivors are recomputed from the servers) */
	walk(c, j, now_usec, next, failed);
	sched_pass_request(c, now_usec);
}

static void fall_back(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		      const char *what)
{
	fall_back_from(c, j, now_usec, what, -1);
}

/* Every process paused after the step before the fault's: the job recomputes it. */
static void retry_settle(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	struct sched_ladder *l = &j->ladder;
	char what[SCHED_REASON_MAX];
	double took = (double)elapsed(now_usec, l->began_usec) / 1e6;
	uint64_t step = l->saved_step;
	size_t paused = l->answered_count;

	snprintf(what, sizeof(what),
		 "retry: %zu %s from step %llu and recompute%s the step lost, %.1f s after the "
		 "fault; no process restarted, the NPU in service", paused,
		 paused == 1 ? "process goes on" : "processes go on", (unsigned long long)step,
		 paused == 1 ? "s" : "", took);
	set_outcome(l, what);
	step_end(c, j);
	/* the notice to go on: a request of its own, which nobody answers */
	l->request++;
	l->resumed = true;
	l->resume_step = step;
	sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_RECOVERY, now_usec, what);
}

/* Every survivor paused and the restarted process joined: the job runs on. */
static void in_place_settle(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	char of[48];
	struct sched_ladder *l = &j->ladder;
	char what[SCHED_REASON_MAX], who[CONF_NAME_MAX + 32];
	double took = (double)elapsed(now_usec, l->began_usec) / 1e6;
	uint64_t step = l->saved_step;
	size_t paused = l->answered_count;

	process_label(c, j, (size_t)l->restarted, who, sizeof(who));
	/* it runs again */
	if (j->exited_bad && (size_t)l->restarted < j->exited_count &&
	    j->exits_generation == j->generation)
		j->exited_bad[l->restarted] = false;
	j->restarts++;
	j->restart_counted_usec = now_usec;
	snprintf(what, sizeof(what),
		 "in-place: %s started again on the same NPUs and %zu %s on from step %llu, "
		 "%.1f s after the fault; restart %u%s", who, paused,
		 paused == 1 ? "survivor goes" : "survivors go", (unsigned long long)step, took,
		 j->restarts, sched_restart_of(j, of, sizeof(of)));
	set_outcome(l, what);
	step_end(c, j);
	/* the notice to go on: a request of its own, which nobody answers */
	l->request++;
	l->resumed = true;
	l->resume_step = step;
	sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_RECOVERY, now_usec, what);
}

/*
 * Every survivor paused and rebuilt, every process on a replacement joined: the new
 * generation runs.
 */
static void process_settle(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	char of[48];
	struct sched_ladder *l = &j->ladder;
	char what[SCHED_REASON_MAX];
	double took = (double)elapsed(now_usec, l->began_usec) / 1e6;
	uint64_t step = l->saved_step;
	size_t paused = 0, joined = 0;

	for (size_t i = 0; i < l->process_count; i++) {
		joined += l->answered[i] && l->joining[i];
		paused += l->answered[i] && !l->joining[i];
	}
	j->restarts++;
	j->restart_counted_usec = now_usec;
	snprintf(what, sizeof(what),
		 "process: %zu new %s joined and %zu %s the communicator and go%s on from "
		 "step %llu, %.1f s after the fault; generation %u, restart %u%s", joined,
		 joined == 1 ? "process" : "processes", paused,
		 paused == 1 ? "survivor rebuilt" : "survivors rebuilt", paused == 1 ? "es" : "",
		 (unsigned long long)step, took, j->generation, j->restarts,
		 sched_restart_of(j, of, sizeof(of)));
	set_outcome(l, what);
	step_end(c, j);
	/* the notice to go on: a request of its own, which nobody answers */
	l->request++;
	l->resumed = true;
	l->resume_step = step;
	sched_job_transition(c, j, SCHED_JOB_RUNNING, SCHED_EV_RECOVERY, now_usec, what);
}

static void step_settle(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	struct sched_ladder *l = &j->ladder;
	char what[SCHED_REASON_MAX], note[SCHED_REASON_MAX];
	double took = (double)elapsed(now_usec, l->began_usec) / 1e6;

	if (l->strategy == CONF_RECOVERY_IN_PLACE) {
		if (l->joined)
			in_place_settle(c, j, now_usec);
		return;
	}
	if (l->strategy == CONF_RECOVERY_PROCESS) {
		process_settle(c, j, now_usec);
		return;
	}
	if (l->strategy == CONF_RECOVERY_RETRY) {
		retry_settle(c, j, now_usec);
		return;
	}
	if (!l->saved_path) {
		snprintf(what, sizeof(what), "dump: %s", l->answered_count ?
			 "the processes answered but none saved a checkpoint" :
			 "no surviving process is left to save");
		fall_back(c, j, now_usec, what);
		return;
	}
	if (j->checkpoint_path && j->checkpoint_step > l->saved_step) {
		/* a newer checkpoint is known: never resume from an older step */
		snprintf(what, sizeof(what), "dump: the saved step %llu is older than checkpoint "
			 "step %llu; the job restarts from the newer",
			 (unsigned long long)l->saved_step, (unsigned long long)j->checkpoint_step);
		set_outcome(l, what);
		sched_event_add(c, now_usec, SCHED_EV_RECOVERY, j, NULL, -1, "%s", what);
		job_level(c, j, now_usec, "");
		sched_pass_request(c, now_usec);
		return;
	}
	/* the dying-gasp checkpoint is the job's newest: the restart resumes from it */
	free(j->checkpoint_path);
	j->checkpoint_path = l->saved_path;
	l->saved_path = NULL;
	j->checkpoint_step = l->saved_step;
	j->checkpoint_usec = now_usec;
	j->checkpoint_reported = true;
	sched_event_add(c, now_usec, SCHED_EV_CHECKPOINT, j, NULL, -1,
			"step %llu at %s (dying-gasp save)", (unsigned long long)j->checkpoint_step,
			j->checkpoint_path);
	snprintf(what, sizeof(what), "dump: %zu %s saved step %llu in %.1f s (%s)",
		 l->answered_count, l->answered_count == 1 ? "process" : "processes",
		 (unsigned long long)j->checkpoint_step, took, j->checkpoint_path);
	set_outcome(l, what);
	sched_event_add(c, now_usec, SCHED_EV_RECOVERY, j, NULL, -1, "%s; job-level restart from it",
			what);
	snprintf(note, sizeof(note), "; resumes from the dying-gasp checkpoint of step %llu",
		 (unsigned long long)j->checkpoint_step);
	job_level(c, j, now_usec, note);
	sched_pass_request(c, now_usec);
}

void sched_job_recover(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       const char *why)
{
	struct sched_ladder *l = &j->ladder;

	if (j->state == SCHED_JOB_RECOVERING && l->active &&
	    (l->strategy == CONF_RECOVERY_IN_PLACE || l->strategy == CONF_RECOVERY_PROCESS ||
	     l->strategy == CONF_RECOVERY_RETRY)) {
		char what[SCHED_REASON_MAX];

		/* a server or NPU of the job failed: the next rung moves the job off it */
		snprintf(what, sizeof(what), "%s: %.300s during the step",
			 conf_recovery_name(l->strategy), why);
		l->process_fault = false;
		l->fault_server = -1;
		fall_back(c, j, now_usec, what);
		return;
	}
	if (j->state == SCHED_JOB_RECOVERING && l->active) {
		/*
		 * another server failed during the step: its processes will not answer, and
		 * the job-level rung must move off it, whatever fault opened the step
		 */
		l->process_fault = false;
		l->fault_server = -1;
		for (size_t i = 0; i < l->process_count; i++)
			if (l->waited[i] && !survives(c, j, i, -1)) {
				l->waited[i] = false;
				l->waited_count--;
			}
		sched_event_add(c, now_usec, SCHED_EV_RECOVERY, j, NULL, -1,
				"%.300s during the dump; %zu surviving %s still to answer", why,
				l->waited_count, l->waited_count == 1 ? "process" : "processes");
		step_changed(c, j);
		if (!l->waited_count)
			step_settle(c, j, now_usec);
		return;
	}
	if (j->state != SCHED_JOB_RUNNING)
		return;
	fault(c, j, now_usec, why, false, false, -1, -1);
}

void sched_job_retry(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		     const char *why)
{
	if (j->state != SCHED_JOB_RUNNING)
		return;
	fault(c, j, now_usec, why, false, true, -1, -1);
}

void sched_job_restart(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec,
		       const char *why, int server, long process)
{
	if (j->state != SCHED_JOB_RUNNING)
		return;
	fault(c, j, now_usec, why, true, false, server, process);
}

void sched_ladder_process_gone(struct sched_cluster *c, struct sched_job *j, size_t process,
			       int code, uint64_t now_usec)
{
	struct sched_ladder *l = &j->ladder;

	if (l->active && l->strategy == CONF_RECOVERY_IN_PLACE && process < l->process_count &&
	    ((long)process == l->restarted || l->waited[process] || l->answered[process])) {
		char what[SCHED_REASON_MAX], who[CONF_NAME_MAX + 32];

		process_label(c, j, process, who, sizeof(who));
		if ((long)process == l->restarted)
			snprintf(what, sizeof(what), "in-place: %s exited again with status %d",
				 who, code);
		else
			snprintf(what, sizeof(what), "in-place: %s exited with status %d during "
				 "the step; its state is gone", who, code);
		fall_back(c, j, now_usec, what);
		return;
	}
	if (l->active && l->strategy == CONF_RECOVERY_RETRY && process < l->process_count &&
	    (l->waited[process] || l->answered[process])) {
		char what[SCHED_REASON_MAX], who[CONF_NAME_MAX + 32];

		/* a crash during the retry: the next rungs take it for the process's fault
		 * (in-place restarts it alone) */
		process_label(c, j, process, who, sizeof(who));
		snprintf(what, sizeof(what), "retry: %s exited with status %d during the step",
			 who, code);
		if (code != 0) {
			l->process_fault = true;
			l->fault_server = (int)j->slices[sched_job_process_slice(j, process)].server;
		}
		fall_back_from(c, j, now_usec, what, (long)process);
		return;
	}
	if (l->active && l->strategy == CONF_RECOVERY_PROCESS && process < l->process_count &&
	    (l->waited[process] || l->answered[process])) {
		char what[SCHED_REASON_MAX], who[CONF_NAME_MAX + 32];

		process_label(c, j, process, who, sizeof(who));
		snprintf(what, sizeof(what), "process: %s exited with status %d during the step%s",
			 who, code, l->joining[process] ? " (it had just started)" :
			 "; its state is gone");
		fall_back(c, j, now_usec, what);
		return;
	}
	if (!l->active || process >= l->process_count || !l->waited[process])
		return;
	l->waited[process] = false;
	l->waited_count--;
	step_changed(c, j);
	if (!l->waited_count)
		step_settle(c, j, now_usec);
}

/* Process @idx, waited for, has answered the step's request. */
static void mark_answered(struct sched_cluster *c, struct sched_job *j, size_t idx,
			  uint64_t now_usec)
{
	struct sched_ladder *l = &j->ladder;

	l->waited[idx] = false;
	l->waited_count--;
	l->answered[idx] = true;
	l->answered_count++;
	j->change_usec = now_usec;
	step_changed(c, j);
}

/* An in-place step's answer from process @idx (checked to be the job's). */
static int in_place_answer(struct sched_cluster *c, struct sched_job *j, size_t idx,
			   enum sched_recovery_answer answer, uint64_t step, const char *server,
			   uint64_t now_usec, char *reason)
{
	struct sched_ladder *l = &j->ladder;

	if (answer == SCHED_ANSWER_JOINED) {
		if ((long)idx != l->restarted) {
			sched_reason(reason, "the process on %s did not restart in request %u: "
					     "only the restarted process answers joined; the others "
					     "answer paused <request> <server> <rank|-> <step>",
				     server, l->request);
			return -EINVAL;
		}
		/* (answered[] and its count are the survivors': a restore counts them) */
		if (!l->joined) {
			l->joined = true;
			j->change_usec = now_usec;
			step_changed(c, j);
		}
	} else {
		if (l->answered[idx])
			return 0; /* a retry of the same write */
		if (!l->waited[idx]) {
			sched_reason(reason, "the process on %s is %s: it answers joined "
					     "<request> <server> <rank|->, not paused",
				     server, (long)idx == l->restarted ?
				     "the one restarted in place" : "not asked to pause");
			return -EINVAL;
		}
		if (step > l->saved_step)
			l->saved_step = step;
		mark_answered(c, j, idx, now_usec);
	}
	if (!l->waited_count && l->joined)
		in_place_settle(c, j, now_usec);
	return 0;
}

/* A retry step's answer from process @idx (checked to be the job's). */
static int retry_answer(struct sched_cluster *c, struct sched_job *j, size_t idx,
			enum sched_recovery_answer answer, uint64_t step, const char *server,
			uint64_t now_usec, char *reason)
{
	struct sched_ladder *l = &j->ladder;

	if (answer != SCHED_ANSWER_PAUSED) {
		sched_reason(reason, "request %u of job %s is a retry: no process restarted, "
				     "each answers paused <request> <server> <rank|-> <step> with "
				     "the last step it finished", l->request, j->name);
		return -EINVAL;
	}
	if (l->answered[idx])
		return 0; /* a retry of the same write */
	if (!l->waited[idx]) {
		sched_reason(reason, "the process on %s is not asked to answer request %u (it "
				     "exited, or its server has no agent)", server, l->request);
		return -EINVAL;
	}
	/* the last step every process finished: one a step ahead computes it again */
	if (!l->answered_count || step < l->saved_step)
		l->saved_step = step;
	mark_answered(c, j, idx, now_usec);
	if (!l->waited_count)
		retry_settle(c, j, now_usec);
	return 0;
}

/* A process step's answer from process @idx (checked to be the job's). */
static int process_answer(struct sched_cluster *c, struct sched_job *j, size_t idx,
			  enum sched_recovery_answer answer, uint64_t step, const char *server,
			  uint64_t now_usec, char *reason)
{
	struct sched_ladder *l = &j->ladder;
	bool join = answer == SCHED_ANSWER_JOINED;

	if (join != l->joining[idx]) {
		sched_reason(reason, "the process on %s %s in request %u: %s", server,
			     l->joining[idx] ? "started on a replacement server" :
					       "was kept running",
			     l->request, l->joining[idx] ?
			     "it answers joined <request> <server> <rank|-> once up" :
			     "it answers paused <request> <server> <rank|-> <step> once paused "
			     "and its communicator rebuilt");
		return -EINVAL;
	}
	if (l->answered[idx])
		return 0; /* a retry of the same write */
	if (!l->waited[idx]) {
		sched_reason(reason, "the process on %s is not asked to answer request %u (it "
				     "exited, or its server failed)", server, l->request);
		return -EINVAL;
	}
	if (!join) {
		if (step > l->saved_step)
			l->saved_step = step;
	}
	mark_answered(c, j, idx, now_usec);
	if (!l->waited_count)
		process_settle(c, j, now_usec);
	return 0;
}

int sched_job_recovery_answer(struct sched_cluster *c, const char *name, uid_t uid,
			      unsigned request, const char *server, int rank,
			      enum sched_recovery_answer answer, uint64_t step, const char *path,
			      uint64_t now_usec, char *reason)
{
	bool saved = answer == SCHED_ANSWER_SAVED;
	bool in_place_word = answer == SCHED_ANSWER_PAUSED || answer == SCHED_ANSWER_JOINED;
	struct sched_job *j = sched_cluster_find_job(c, name);
	struct sched_ladder *l;
	size_t idx;
	char *copy = NULL;

	if (!j)
		return -ENOENT;
	if (uid != 0 && uid != j->uid)
		return -EPERM;
	l = &j->ladder;
	if (!l->active || request != l->request) {
		if (l->active && request && request < l->request)
			sched_reason(reason, "request %u of job %s is over; the open request is %u",
				     request, name, l->request);
		else if (l->active)
			sched_reason(reason, "job %s has no request %u; the open request is %u",
				     name, request, l->request);
		else
			sched_reason(reason, "job %s has no open recovery request (the last was "
					     "%u)", name, l->request);
		return -ESTALE;
	}
	if (step > INT64_MAX) {
		sched_reason(reason, "a step is at most %lld", (long long)INT64_MAX);
		return -EINVAL;
	}
	if (path && path[0] != '/') {
		sched_reason(reason, "a saved checkpoint is an absolute path and a step");
		return -EINVAL;
	}
	if (j->spec->launch != CONF_LAUNCH_PER_RANK && rank >= 0) {
		sched_reason(reason, "job %s runs one msrun process per server: answer with \"-\" "
				     "as the rank", name);
		return -EINVAL;
	}
	if (j->spec->launch == CONF_LAUNCH_PER_RANK && rank < 0) {
		sched_reason(reason, "job %s runs one process per rank: answer with the process's "
				     "rank (RANK_ID), not \"-\"", name);
		return -EINVAL;
	}
	if (sched_job_process_index(c, j, server, j->spec->launch == CONF_LAUNCH_PER_RANK ?
							  rank : -1, &idx, reason) < 0)
		return -EINVAL;
	if (in_place_word != (l->strategy != CONF_RECOVERY_DUMP)) {
		sched_reason(reason, "request %u of job %s asks %s; answer %s", request, name,
			     l->strategy == CONF_RECOVERY_IN_PLACE ?
				     "to pause for an in-place restart" :
			     l->strategy == CONF_RECOVERY_PROCESS ?
				     "to pause and rebuild the communicator (process-level)" :
			     l->strategy == CONF_RECOVERY_RETRY ?
				     "to pause and recompute the step (retry)" :
				     "to save (dump)",
			     l->strategy == CONF_RECOVERY_IN_PLACE ?
				     "paused <request> <server> <rank|-> <step> (or joined, "
				     "from the restarted process)" :
			     l->strategy == CONF_RECOVERY_PROCESS ?
				     "paused <request> <server> <rank|-> <step> (or joined, "
				     "from a process on a replacement server)" :
			     l->strategy == CONF_RECOVERY_RETRY ?
				     "paused <request> <server> <rank|-> <step>" :
				     "saved <request> <server> <rank|-> <step> [<path>] or "
				     "save-failed <request> <server> <rank|->");
		return -EINVAL;
	}
	if (l->strategy == CONF_RECOVERY_PROCESS)
		return process_answer(c, j, idx, answer, step, server, now_usec, reason);
	if (l->strategy == CONF_RECOVERY_RETRY)
		return retry_answer(c, j, idx, answer, step, server, now_usec, reason);
	if (in_place_word)
		return in_place_answer(c, j, idx, answer, step, server, now_usec, reason);
	/* the same answer again is a retry of a write; another one is refused */
	if (l->answered[idx] && saved &&
	    (!path || (l->saved_path && strcmp(path, l->saved_path) == 0 && step == l->saved_step)))
		return 0;
	if (l->answered[idx]) {
		sched_reason(reason, "the process on %s already answered request %u (saved); a "
				     "second answer with another step or checkpoint is refused",
			     server, request);
		return -EINVAL;
	}
	if (!l->waited[idx]) {
		sched_reason(reason, "the process on %s%s is not asked to answer (its server or "
				     "it failed)", server,
			     j->spec->launch == CONF_LAUNCH_PER_RANK ? " of that rank" : "");
		return -EINVAL;
	}
	if (!saved) {
		char what[SCHED_REASON_MAX];

		if (j->spec->launch == CONF_LAUNCH_PER_RANK)
			snprintf(what, sizeof(what), "dump: rank %d on %s could not save", rank,
				 server);
		else
			snprintf(what, sizeof(what), "dump: the process on %s could not save",
				 server);
		fall_back(c, j, now_usec, what);
		return 0;
	}
	if (path && (!l->saved_path || step >= l->saved_step)) {
		copy = strdup(path);
		if (!copy)
			return -ENOMEM;
		free(l->saved_path);
		l->saved_path = copy;
		l->saved_step = step;
	}
	mark_answered(c, j, idx, now_usec);
	if (!l->waited_count)
		step_settle(c, j, now_usec);
	return 0;
}

unsigned sched_ladder_expire(struct sched_cluster *c, uint64_t now_usec)
{
	unsigned changed = 0;

	if (!c->ladder_active)
		return 0;
	for (size_t i = 0; i < c->job_count; i++) {
		struct sched_job *j = c->jobs[i];
		struct sched_ladder *l = &j->ladder;
		char what[SCHED_REASON_MAX];

		if (j->state != SCHED_JOB_RECOVERING || !l->active || now_usec < l->deadline_usec)
			continue;
		if (l->strategy == CONF_RECOVERY_RETRY) {
			snprintf(what, sizeof(what),
				 "retry timed out: %zu of %zu processes paused to recompute the "
				 "step within %u s (recovery_timeout)", l->answered_count,
				 l->answered_count + l->waited_count,
				 c->conf->recovery_timeout_sec);
		} else if (l->strategy == CONF_RECOVERY_PROCESS) {
			size_t p = 0, pw = 0, jn = 0, jw = 0;

			for (size_t k = 0; k < l->process_count; k++) {
				size_t *done = l->joining[k] ? &jn : &p, *all = l->joining[k] ? &jw : &pw;

				*done += l->answered[k];
				*all += l->answered[k] || l->waited[k];
			}
			snprintf(what, sizeof(what),
				 "process timed out: %zu of %zu surviving processes rebuilt and %zu "
				 "of %zu new processes joined within %u s (recovery_timeout)", p, pw,
				 jn, jw, c->conf->recovery_timeout_sec);
		} else if (l->strategy == CONF_RECOVERY_IN_PLACE)
			snprintf(what, sizeof(what),
				 "in-place timed out: %zu of %zu surviving processes paused and "
				 "the restarted process %s within %u s (recovery_timeout)",
				 l->answered_count, l->answered_count + l->waited_count,
				 l->joined ? "joined" : "did not join",
				 c->conf->recovery_timeout_sec);
		else
			snprintf(what, sizeof(what),
				 "dump timed out: %zu of %zu surviving processes answered within "
				 "%u s (recovery_timeout)",
				 l->answered_count, l->answered_count + l->waited_count,
				 c->conf->recovery_timeout_sec);
		fall_back(c, j, now_usec, what);
		changed++;
	}
	return changed;
}

bool sched_ladder_lists(const struct sched_cluster *c, const struct sched_job *j,
			size_t slice)
{
	return j->state == SCHED_JOB_RECOVERING && j->ladder.active &&
	       slice < j->slice_count && !sched_slice_is_bad(c, &j->slices[slice]) &&
	       !(j->ladder.fault_server >= 0 && !j->ladder.process_fault &&
		 j->slices[slice].server == (unsigned)j->ladder.fault_server);
}

void sched_ladder_restored(struct sched_cluster *c, struct sched_job *j, uint64_t now_usec)
{
	struct sched_ladder *l = &j->ladder;
	size_t count = sched_job_process_count(j);

	if (j->state != SCHED_JOB_RECOVERING) {
		step_end(c, j);
		return;
	}
	if (!l->active || l->process_count != count) {
		/* no step to wait on (a record without one, a placement that changed): the
		 * next tick falls back from it to the ladder's next rung */
		bool *w = calloc(count ? count : 1, sizeof(*w));
		bool *a = calloc(count ? count : 1, sizeof(*a));
		bool *jn = calloc(count ? count : 1, sizeof(*jn));

		step_end(c, j);
		if (!w || !a || !jn) {
			free(w);
			free(a);
			free(jn);
			return; /* nothing to fall back from: the job stays as it is */
		}
		if (!l->why)
			l->why = strdup("the daemon restarted during a recovery");
		l->waited = w;
		l->answered = a;
		l->joining = jn;
		l->process_count = count;
		l->began_usec = now_usec;
		l->deadline_usec = now_usec;
		if (!j->spec || l->rung >= j->spec->recovery_count)
			l->rung = 0;
	}
	/* a strategy the configuration no longer allows falls back at the next tick */
	if (!(c->conf->recovery_allowed & (1u << l->strategy)))
		l->deadline_usec = now_usec;
	l->active = l->counted = true;
	c->ladder_active++;
}
