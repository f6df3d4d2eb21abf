/* SPDX-License-Identifier: MIT */
/*
 * Everything sched turns into bytes but the rank table (sched_ranktable.c): env files,
 * status and topology JSON, Prometheus metrics, events.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "sched_comm.h"
#include "sched_internal.h"
#include "sched_json.h"

int sched_shell_quote(char **bufp, size_t *len, size_t *cap, const char *value)
{
	struct sched_buf b = { .p = *bufp, .len = *len, .cap = *cap };

	sched_buf_printf(&b, "'");
	for (const char *s = value; *s; s++) {
		if (*s == '\'')
			sched_buf_printf(&b, "'\\''");
		else
			sched_buf_printf(&b, "%c", *s);
	}
	sched_buf_printf(&b, "'");
	/* the block may have moved before a later realloc failed: always hand it back */
	*bufp = b.p;
	*len = b.len;
	*cap = b.cap;
	return b.err;
}

static void buf_export(struct sched_buf *b, const char *name, const char *value)
{
	if (b->err)
		return;
	sched_buf_printf(b, "export %s=", name);
	if (!b->err)
		b->err = sched_shell_quote(&b->p, &b->len, &b->cap, value);
	sched_buf_printf(b, "\n");
}

static void buf_exportf(struct sched_buf *b, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void buf_exportf(struct sched_buf *b, const char *name, const char *fmt, ...)
{
	char value[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	buf_export(b, name, value);
}

static const char *log_level_number(const char *level)
{
	if (!level)
		return "1";
	if (strcmp(level, "debug") == 0)
		return "0";
	if (strcmp(level, "warning") == 0)
		return "2";
	if (strcmp(level, "error") == 0)
		return "3";
	return "1";
}

/*
 * MindSpore's launch environment, in the two modes of enable_dynamic_network. Rules, from
 * MindSpore's own code:
 * - A process with MS_ROLE or MS_SCHED_HOST set is a member of a dynamic cluster
 *   (common UseDynamicCluster(); communication.init() takes the host path when MS_ROLE is
 *   set) and waits for an MS_SCHED process: msrun starts one on the master
 *   (parallel/cluster/process_entity/_api.py: MS_ROLE=MS_SCHED, RANK_ID 0, same command).
 * - With RANK_TABLE_FILE set, HCCL is initialized from the table, and in a dynamic cluster
 *   DEVICE_ID must then be set (collective_manager.cc, AssignLocalRank(): use_ranktable);
 *   without it the device is the process's local rank (the position of its rank among
 *   those of its host), mapped through ASCEND_RT_VISIBLE_DEVICES.
 * So in rank-table mode no file but hosts/<server>.env (msrun's own, whose children msrun
 * gives MS_* anyway) has an MS_* variable, and in dynamic mode no file has RANK_TABLE_FILE
 * (the table stays readable at ASCEND_JOB_DIR/ranktable.json).
 */
/*
 * Does @j start from its rank table (no MS_* variable, RANK_TABLE_FILE set)? With
 * enable_dynamic_network false; and a service always: MindIE Server reads the table
 * for multi-node inference (RANK_TABLE_FILE, older releases RANKTABLEFILE) and is no
 * member of a MindSpore dynamic cluster.
 */
static bool rank_table_mode(const struct sched_cluster *c, const struct sched_job *j)
{
	return !c->conf->enable_dynamic_network || (j->spec && j->spec->kind == CONF_JOB_SERVICE);
}

static void sched_lines(struct sched_buf *b, const struct sched_cluster *c, const struct sched_job *j)
{
	const struct conf_server *master = sched_slice_server(c, &j->slices[0])->conf;

	buf_export(b, "MS_SCHED_HOST", master->host_ip);
	buf_exportf(b, "MS_SCHED_PORT", "%u", j->sched_port);
	buf_exportf(b, "MS_WORKER_NUM", "%u", sched_job_total_npus(j));
}

/*
 * A service instance's MindIE Server environment (MindIE installation guide, multi-node
 * inference): RANKTABLEFILE beside RANK_TABLE_FILE (older releases read it), MASTER_IP
 * (rank 0's server, the master, the only instance server that takes requests) and
 * WORLD_SIZE as the platform's launcher gives them, HCCL_DETERMINISTIC=true as
 * recommended; and where it serves (ASCEND_SERVICE*; in the disaggregated layout its
 * role and the service's global rank table, GLOBAL_RANK_TABLE_FILE_PATH as MindIE MS
 * names it). Per server, HOST_IP and
 * MIES_CONTAINER_IP (hosts/<server>.env, ranks/<rank>.env).
 */
static void service_lines(struct sched_buf *b, const struct sched_cluster *c,
			  const struct sched_job *j, const char *mount)
{
	buf_exportf(b, "RANKTABLEFILE", "%s/jobs/%s/ranktable.json", mount, j->name);
	buf_export(b, "MASTER_IP", sched_slice_server(c, &j->slices[0])->conf->host_ip);
	buf_exportf(b, "WORLD_SIZE", "%u", sched_job_total_npus(j));
	buf_export(b, "HCCL_DETERMINISTIC", "true");
	buf_export(b, "ASCEND_SERVICE", j->service[0] ? j->service : j->name);
	buf_exportf(b, "ASCEND_SERVICE_PORT", "%u", j->spec->port);
	/* the disaggregated layout: prefill or decode, and the table MindIE MS follows */
	if (sched_service_role(j)) {
		buf_export(b, "ASCEND_SERVICE_ROLE", sched_service_role(j));
		buf_exportf(b, "GLOBAL_RANK_TABLE_FILE_PATH", "%s/jobs/%s/global_ranktable.json",
			    mount, j->service);
	}
}

/* The address a service's process on server @cs serves on (MindIE: HOST_IP on bare
 * metal, MIES_CONTAINER_IP in a container, which on the host's network is the same). */
static void service_server_lines(struct sched_buf *b, const struct sched_job *j,
				 const struct conf_server *cs)
{
	if (!j->spec || j->spec->kind != CONF_JOB_SERVICE)
		return;
	buf_export(b, "HOST_IP", cs->host_ip);
	buf_export(b, "MIES_CONTAINER_IP", cs->host_ip);
}

/*
 * An array element's index, as Slurm gives SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID,
 * SLURM_ARRAY_TASK_COUNT, _MIN and _MAX: the array's name, this element's index, and
 * the array's count and smallest and largest index.
 */
static void array_lines(struct sched_buf *b, const struct sched_cluster *c,
			const struct sched_job *j)
{
	/* the lookup changes nothing: find_job takes a mutable cluster */
	const struct sched_job *a = sched_array_of((struct sched_cluster *)c, j);
	const char *dot = strrchr(j->name, '.');
	unsigned lo = CONF_ARRAY_INDEX_MAX, hi = 0;

	if (!dot)
		return;
	buf_exportf(b, "ASCEND_ARRAY_JOB", "%.*s", (int)(dot - j->name), j->name);
	buf_exportf(b, "ASCEND_ARRAY_INDEX", "%u", j->array_index);
	if (!a)
		return;
	for (unsigned i = 0; i <= CONF_ARRAY_INDEX_MAX; i++)
		if (conf_job_array_has(&a->spec->array, i)) {
			lo = i < lo ? i : lo;
			hi = i;
		}
	buf_exportf(b, "ASCEND_ARRAY_COUNT", "%u", a->spec->array.count);
	buf_exportf(b, "ASCEND_ARRAY_MIN", "%u", lo);
	buf_exportf(b, "ASCEND_ARRAY_MAX", "%u", hi);
}

/*
 * The layout this generation runs with, every size, whether the spec gave it or not: dp
 * follows the NPU count (an elastic job's changes with its size), and a launcher maps the
 * five onto its framework's settings without arithmetic (fs.h says how). A layout the
 * NPU count does not fit (not reached: the parser and the elastic sizes keep it whole)
 * exports what the spec gave, as before.
 */
static void parallel_lines(struct sched_buf *b, const struct sched_job *j)
{
	static const char *const names[SCHED_DIM_COUNT] = {
		"ASCEND_PARALLEL_TP", "ASCEND_PARALLEL_CP", "ASCEND_PARALLEL_EP",
		"ASCEND_PARALLEL_DP", "ASCEND_PARALLEL_PP",
	};
	struct sched_parallel par;

	if (sched_parallel_from_spec(j->spec, sched_job_total_npus(j), &par) == 0) {
		for (int d = 0; d < SCHED_DIM_COUNT; d++)
			buf_exportf(b, names[d], "%u", par.size[d]);
		return;
	}
	if (!j->spec)
		return;
	{
		const unsigned given[SCHED_DIM_COUNT] = { j->spec->tp, j->spec->cp, j->spec->ep,
							  j->spec->dp, j->spec->pp };

		for (int d = 0; d < SCHED_DIM_COUNT; d++)
			if (given[d])
				buf_exportf(b, names[d], "%u", given[d]);
	}
}

static void job_env_lines(struct sched_buf *b, const struct sched_cluster *c,
			  const struct sched_job *j, const struct sched_render_ctx *ctx)
{
	const struct conf_cluster *cf = c->conf;
	const char *mount = ctx && ctx->mount_path ? ctx->mount_path : "";
	unsigned ranks = sched_job_total_npus(j);

	buf_export(b, "ASCEND_JOB_ID", j->name);
	buf_exportf(b, "ASCEND_JOB_GENERATION", "%u", j->generation);
	buf_export(b, "ASCEND_RESUME_CHECKPOINT", j->resume_path ? j->resume_path : "");
	buf_exportf(b, "ASCEND_JOB_DIR", "%s/jobs/%s", mount, j->name);
	if (rank_table_mode(c, j))
		buf_exportf(b, "RANK_TABLE_FILE", "%s/jobs/%s/ranktable.json", mount, j->name);
	buf_exportf(b, "RANK_SIZE", "%u", ranks);
	buf_exportf(b, "SERVER_COUNT", "%zu", j->slice_count);
	if (!rank_table_mode(c, j))
		sched_lines(b, c, j);
	if (j->spec && j->spec->kind == CONF_JOB_SERVICE)
		service_lines(b, c, j, mount);
	if (j->array_serial)
		array_lines(b, c, j);
	buf_exportf(b, "HCCL_CONNECT_TIMEOUT", "%u", cf->hccl_connect_timeout_sec);
	if (cf->hccl_exec_timeout_sec)
		buf_exportf(b, "HCCL_EXEC_TIMEOUT", "%u", cf->hccl_exec_timeout_sec);
	if (cf->hccl_if_ip)
		buf_export(b, "HCCL_IF_IP", cf->hccl_if_ip);
	if (cf->hccl_socket_ifname)
		buf_export(b, "HCCL_SOCKET_IFNAME", cf->hccl_socket_ifname);
	/* CANN: ASCEND_MODULE_LOG_LEVEL=HCCL=<0 debug|1 info|2 warning|3 error> */
	buf_exportf(b, "ASCEND_MODULE_LOG_LEVEL", "HCCL=%s", log_level_number(cf->hccl_log_level));
	if (j->spec && j->spec->checkpoint_dir)
		buf_export(b, "ASCEND_CHECKPOINT_DIR", j->spec->checkpoint_dir);
	parallel_lines(b, j);
	buf_exportf(b, "ASCEND_TOPOLOGY_FILE", "%s/jobs/%s/topology.json", mount, j->name);
}

int sched_render_job_env(const struct sched_cluster *c, const struct sched_job *j,
			 const struct sched_render_ctx *ctx, char **ret, size_t *ret_len)
{
	struct sched_buf b = { 0 };

	if (!j->slice_count)
		return -ENOENT;
	sched_buf_printf(&b, "# job %s, generation %u: job-wide environment (source with `.`)\n",
		   j->name, j->generation);
	job_env_lines(&b, c, j, ctx);
	return sched_buf_finish(&b, ret, ret_len);
}

static void device_list(struct sched_buf *b, const struct sched_slice *sl)
{
	for (unsigned k = 0; k < sl->npu_count; k++)
		sched_buf_printf(b, "%s%u", k ? "," : "", sl->device_ids[k]);
}

int sched_render_host_env(const struct sched_cluster *c, const struct sched_job *j, size_t slice,
			  const struct sched_render_ctx *ctx, char **ret, size_t *ret_len)
{
	const struct sched_slice *sl;
	const struct conf_server *cs;
	struct sched_buf b = { 0 }, devs = { 0 }, args = { 0 };
	const char *mount = ctx && ctx->mount_path ? ctx->mount_path : "";
	int r;

	if (slice >= j->slice_count)
		return -ENOENT;
	sl = &j->slices[slice];
	cs = sched_slice_server(c, sl)->conf;
	device_list(&devs, sl);
	/* msrun's own flags (MindSpore msrun launcher) */
	sched_buf_printf(&args,
		   "--worker_num=%u --local_worker_num=%u --master_addr=%s --master_port=%u "
		   "--node_rank=%zu --log_dir=msrun_log_%s_g%u --join=True",
		   sched_job_total_npus(j), sl->npu_count,
		   sched_slice_server(c, &j->slices[0])->conf->host_ip, j->sched_port, slice, j->name,
		   j->generation);
	if (rank_table_mode(c, j))
		sched_buf_printf(&args, " --rank_table_file=%s/jobs/%s/ranktable.json", mount, j->name);

	sched_buf_printf(&b, "# job %s, generation %u: server %s (msrun node rank %zu)\n", j->name,
		   j->generation, cs->name, slice);
	job_env_lines(&b, c, j, ctx);
	if (rank_table_mode(c, j) && !(j->spec && j->spec->kind == CONF_JOB_SERVICE))
		sched_lines(&b, c, j); /* msrun's master, as msrun gives its children */
	buf_export(&b, "SERVER_ID", cs->host_ip);
	service_server_lines(&b, j, cs);
	buf_export(&b, "ASCEND_SERVER_NAME", cs->name);
	buf_exportf(&b, "MS_NODE_RANK", "%zu", slice);
	buf_exportf(&b, "MS_LOCAL_WORKER", "%u", sl->npu_count);
	buf_exportf(&b, "RANK_START", "%u", sl->first_rank);
	buf_export(&b, "ASCEND_RT_VISIBLE_DEVICES", devs.err ? "" : devs.p);
	buf_export(&b, "MSRUN_ARGS", args.err ? "" : args.p);
	if (devs.err || args.err)
		b.err = -ENOMEM;
	free(devs.p);
	free(args.p);
	r = sched_buf_finish(&b, ret, ret_len);
	return r;
}

int sched_render_role_env(const struct sched_cluster *c, const struct sched_job *svc,
			  enum sched_role role, const struct sched_render_ctx *ctx, char **ret,
			  size_t *ret_len)
{
	const struct sched_role_run *run = sched_service_role_run(svc, role);
	const char *mount = ctx && ctx->mount_path ? ctx->mount_path : "";
	const char *name = sched_role_name(role);
	int server = sched_service_role_server(c, svc, role);
	const struct conf_server *cs;
	struct sched_buf b = { 0 };

	if (!run || server < 0)
		return -ENOENT;
	cs = c->servers[server].conf;
	sched_buf_printf(&b, "# service %s, %s generation %u: server %s\n", svc->name, name,
			 run->generation, cs->name);
	buf_exportf(&b, "ASCEND_JOB_ID", "%s.%s", svc->name, name);
	buf_exportf(&b, "ASCEND_JOB_GENERATION", "%u", run->generation);
	buf_exportf(&b, "ASCEND_JOB_DIR", "%s/jobs/%s", mount, svc->name);
	buf_export(&b, "ASCEND_SERVICE", svc->name);
	buf_export(&b, "ASCEND_SERVICE_ROLE", name);
	buf_exportf(&b, "ASCEND_SERVICE_PORT", "%u", svc->spec->port);
	buf_exportf(&b, "GLOBAL_RANK_TABLE_FILE_PATH", "%s/jobs/%s/global_ranktable.json", mount,
		    svc->name);
	buf_export(&b, "HOST_IP", cs->host_ip);
	buf_export(&b, "POD_IP", cs->host_ip);
	buf_export(&b, "MIES_CONTAINER_IP", cs->host_ip);
	buf_export(&b, "ASCEND_SERVER_NAME", cs->name);
	return sched_buf_finish(&b, ret, ret_len);
}

int sched_render_rank_env(const struct sched_cluster *c, const struct sched_job *j, unsigned rank,
			  const struct sched_render_ctx *ctx, char **ret, size_t *ret_len)
{
	struct sched_buf b = { 0 }, devs = { 0 };

	for (size_t i = 0; i < j->slice_count; i++) {
		const struct sched_slice *sl = &j->slices[i];
		const struct conf_server *cs = sched_slice_server(c, sl)->conf;

		if (rank < sl->first_rank || rank >= sl->first_rank + sl->npu_count)
			continue;
		sched_buf_printf(&b, "# job %s, generation %u: rank %u on server %s\n", j->name,
			   j->generation, rank, cs->name);
		job_env_lines(&b, c, j, ctx);
		buf_export(&b, "SERVER_ID", cs->host_ip);
		service_server_lines(&b, j, cs);
		buf_export(&b, "ASCEND_SERVER_NAME", cs->name);
		buf_exportf(&b, "RANK_ID", "%u", rank);
		if (rank_table_mode(c, j)) {
			/* rank-table startup: the physical id, as in the rank table;
			 * ASCEND_RT_VISIBLE_DEVICES stays unset so that it keeps meaning the
			 * physical NPU, and no MS_* variable makes it a dynamic cluster */
			buf_exportf(&b, "DEVICE_ID", "%u", sl->device_ids[rank - sl->first_rank]);
			return sched_buf_finish(&b, ret, ret_len);
		}
		/* a worker of msrun's dynamic cluster (the agent of the master server starts
		 * its MS_SCHED process): MindSpore makes the local rank the device, a logical
		 * id among this server's NPUs of the job, so DEVICE_ID says the same */
		buf_exportf(&b, "DEVICE_ID", "%u", rank - sl->first_rank);
		device_list(&devs, sl);
		buf_export(&b, "ASCEND_RT_VISIBLE_DEVICES", devs.err ? "" : devs.p);
		if (devs.err)
			b.err = -ENOMEM;
		free(devs.p);
		buf_export(&b, "MS_ROLE", "MS_WORKER");
		buf_exportf(&b, "MS_NODE_ID", "%u", rank);
		return sched_buf_finish(&b, ret, ret_len);
	}
	return -ENOENT;
}

static json_t *placement_json(const struct sched_cluster *c, const struct sched_job *j)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < j->slice_count; i++) {
		const struct sched_slice *sl = &j->slices[i];
		const struct sched_server *s = sched_slice_server(c, sl);
		json_t *o = json_object(), *ids = json_array();

		for (unsigned k = 0; k < sl->npu_count; k++)
			sched_jpush(ids, json_integer(sl->device_ids[k]));
		sched_jset(o, "server", sched_jstr(s->conf->name));
		sched_jset(o, "host_ip", sched_jstr(s->conf->host_ip));
		sched_jset(o, "switch", sched_jstr(s->conf->leaf_switch));
		sched_jset(o, "device_ids", ids);
		sched_jset(o, "first_rank", json_integer(sl->first_rank));
		sched_jpush(arr, o);
	}
	return arr;
}

/* A disaggregated service's controller and coordinator: where, and whether ascendfs
 * runs them (sched_service_roles.c) */
static json_t *roles_json(const struct sched_cluster *c, const struct sched_job *svc)
{
	json_t *o = json_object();

	for (int k = 0; k < SCHED_ROLE_COUNT; k++) {
		const struct sched_role_run *run = sched_service_role_run(svc, (enum sched_role)k);
		json_t *r = json_object();
		const char *server = k == SCHED_ROLE_CONTROLLER ? svc->spec->controller :
								  svc->spec->coordinator;
		const char *command = k == SCHED_ROLE_CONTROLLER ? svc->spec->controller_command :
								   svc->spec->coordinator_command;

		sched_jset(r, "server", sched_jstr(server));
		sched_jset(r, "run_by_ascendfs", json_boolean(command != NULL));
		if (command && !run)
			sched_jset(r, "state", sched_jstr("stopped")); /* the service no longer serves */
		if (run) {
			char name[2 * CONF_NAME_MAX];

			snprintf(name, sizeof(name), "%s.%s", svc->name,
				 sched_role_name((enum sched_role)k));
			sched_jset(r, "run", sched_jstr(name));
			sched_jset(r, "generation", json_integer(run->generation));
			/* a server gone from the inventory since: nothing runs it */
			sched_jset(r, "state", sched_jstr(sched_service_role_server(c, svc, (enum sched_role)k) < 0 ?
						      "not run: its server is not in the inventory" :
					      run->restart_at_usec ? "back-off" : "running"));
			sched_jtime(r, "started", run->started_usec);
			sched_jtime(r, "restart_at", run->restart_at_usec);
			sched_jset(r, "restarts", json_integer(run->restarts));
			sched_jset(r, "last_exit_status",
			     run->last_exit >= 0 ? json_integer(run->last_exit) : json_null());
		}
		sched_jset(o, sched_role_name((enum sched_role)k), r);
	}
	return o;
}

/* "ranktable_status" and what it waits for (null when completed or not placed). */
static void ranktable_status_json(const struct sched_cluster *c, const struct sched_job *j,
				  json_t *o)
{
	char why[SCHED_REASON_MAX];
	int r = sched_ranktable_waiting_for(c, j, why, sizeof(why));

	sched_jset(o, "ranktable_status",
	     r < 0 ? json_null() : sched_jstr(r ? "initializing" : "completed"));
	sched_jset(o, "ranktable_waiting_for", r > 0 ? sched_jstr(why) : json_null());
}

int sched_render_job_status_json(const struct sched_cluster *c, const struct sched_job *j,
				 char **ret, size_t *ret_len)
{
	json_t *o = json_object();

	if (!o)
		return -ENOMEM;
	sched_jset(o, "job", sched_jstr(j->name));
	sched_jset(o, "state", sched_jstr(sched_job_state_name(j->state)));
	sched_jset(o, "reason", sched_jstr(j->reason));
	sched_jset(o, "owner_uid", json_integer(j->uid));
	if (j->spec) {
		sched_jset(o, "queue", sched_jstr(j->spec->queue));
		sched_jset(o, "priority", json_integer(j->spec->priority));
		sched_jset(o, "npus", json_integer(j->spec->npus));
		sched_jset(o, "npus_min", json_integer(j->spec->npus_min));
		sched_jset(o, "npus_max", json_integer(j->spec->npus_max));
		sched_jset(o, "time_limit_sec", json_integer((json_int_t)j->spec->time_limit_sec));
	}
	/* run time so far = run_accum_sec + (now - run_since) while run_since is set */
	sched_jset(o, "run_accum_sec", sched_jsec(j->run_accum_usec));
	sched_jtime(o, "run_since", j->run_since_usec);
	/* since when it may start: the age of resource.priority_weight_age counts from it */
	sched_jtime(o, "eligible", j->eligible_usec);
	sched_jset(o, "borrowing", json_boolean(j->borrowing));
	sched_jset(o, "preemptions", json_integer(j->preemptions));
	sched_jset(o, "preempted_by", sched_jstr(j->preempted_by));
	/* a hold (sched_control.c): null, "user" (its owner's) or "admin" (root's) */
	sched_jset(o, "hold", j->hold_kind == SCHED_HOLD_USER ? sched_jstr("user") :
			j->hold_kind == SCHED_HOLD_ADMIN ? sched_jstr("admin") : json_null());
	/* `after:` (sched_deps.c): each job it waits for, how, and where that stands */
	if (j->deps && j->spec) {
		json_t *deps = json_array();

		for (unsigned k = 0; k < j->spec->after_count; k++) {
			json_t *d = json_object();

			sched_jset(d, "job", sched_jstr(j->spec->after[k].name));
			sched_jset(d, "kind", sched_jstr(j->spec->after[k].any ? "afterany" :
										 "afterok"));
			sched_jset(d, "state", sched_jstr(sched_dep_state(c, j, k)));
			sched_jpush(deps, d);
		}
		sched_jset(o, "dependencies", deps);
	} else {
		sched_jset(o, "dependencies", json_array());
	}
	if (j->state == SCHED_JOB_PENDING && j->reserved_start_usec == UINT64_MAX)
		sched_jset(o, "reserved_start", sched_jstr("unknown"));
	else
		sched_jtime(o, "reserved_start",
			 j->state == SCHED_JOB_PENDING ? j->reserved_start_usec : 0);
	sched_jtime(o, "stop_deadline", j->state == SCHED_JOB_STOPPING ? j->stop_deadline_usec : 0);
	if (j->state == SCHED_JOB_STOPPING) {
		json_t *waits = json_array();

		sched_jset(o, "stop_to", sched_jstr(sched_job_state_name(j->stop_cancelled ? SCHED_JOB_CANCELLED
										: j->stop_to)));
		for (size_t i = 0; i < j->slice_count; i++)
			if (!j->slices[i].gone)
				sched_jpush(waits, sched_jstr(sched_slice_server(c, &j->slices[i])->conf->name));
		sched_jset(o, "stop_waits_for", waits);
	} else {
		sched_jset(o, "stop_to", json_null());
		sched_jset(o, "stop_waits_for", json_array());
	}
	/* rmdir of an active job: the record (and its directory) goes once the stop ends */
	sched_jset(o, "stop_removes", json_boolean(j->state == SCHED_JOB_STOPPING && j->stop_forget));
	sched_jset(o, "generation", json_integer(j->generation));
	sched_jset(o, "restarts", json_integer(j->restarts));
	sched_jset(o, "restarts_not_counted", json_integer(j->restarts_coalesced));
	if (sched_job_is_instance(j)) {
		/* its restart back-off: the next quick end's wait, and a restart held */
		json_t *b = json_object();

		sched_jset(b, "next_wait_sec", sched_jsec(j->backoff_usec));
		sched_jtime(b, "restart_at", j->restart_at_usec);
		sched_jset(o, "restart_backoff", b);
	}
	if (sched_job_is_service(j) && j->spec) {
		/* its disruption budget now (sched_disrupt.c); the lookups change nothing */
		struct sched_cluster *mc = (struct sched_cluster *)c;
		json_t *b = json_object();

		sched_jset(b, "preemptible", json_boolean(j->spec->preemptible));
		sched_jset(b, "max_unavailable", json_integer(j->spec->max_unavailable));
		sched_jset(b, "available", json_integer(sched_service_available(mc, j)));
		sched_jset(b, "disruptions_allowed",
		     json_integer(sched_service_disruptions_allowed(mc, j)));
		sched_jset(o, "disruption_budget", b);
		if (j->spec->prefill)
			sched_jset(o, "roles", roles_json(c, j));
	}
	if (sched_job_is_array(j) && j->array) {
		json_t *arr = sched_array_status_json(c, j);

		if (!arr) {
			json_decref(o);
			return -ENOMEM;
		}
		sched_jset(o, "array", arr);
	}
	if (j->array_serial) {
		const char *dot = strrchr(j->name, '.');
		json_t *of = json_object();

		sched_jset(of, "array", json_stringn(j->name, dot ? (size_t)(dot - j->name) : 0));
		sched_jset(of, "index", json_integer(j->array_index));
		sched_jset(o, "array_element", of);
	}
	sched_jset(o, "resume_scan_pending", json_boolean(j->resume_scan_pending));
	sched_jset(o, "npus_allocated", json_integer(sched_job_total_npus(j)));
	sched_jset(o, "placement", placement_json(c, j));
	ranktable_status_json(c, j, o);
	if (j->slice_count) {
		sched_jset(o, "ms_sched_host",
				    sched_jstr(sched_slice_server(c, &j->slices[0])->conf->host_ip));
		sched_jset(o, "ms_sched_port", json_integer(j->sched_port));
	}
	if (j->checkpoint_path) {
		json_t *ck = json_object();

		sched_jset(ck, "step", json_integer((json_int_t)j->checkpoint_step));
		sched_jset(ck, "path", sched_jstr(j->checkpoint_path));
		sched_jset(o, "checkpoint", ck);
	}
	if (j->usage_count) {
		json_t *u = json_object(), *per = json_array();
		uint64_t cpu = 0, mem = 0;

		for (size_t i = 0; i < j->usage_count; i++) {
			const struct sched_job_usage *e = &j->usage[i];
			json_t *s = json_object();

			sched_jset(s, "server", sched_jstr(c->servers[e->server].conf->name));
			sched_jset(s, "generation", json_integer(e->generation));
			sched_jset(s, "cpu_usec", json_integer((json_int_t)e->cpu_usec));
			sched_jset(s, "memory_bytes", json_integer((json_int_t)e->memory_bytes));
			json_array_append_new(per, s);
			/* each is at most INT64_MAX (conf): the sums saturate there */
			cpu = cpu + e->cpu_usec > INT64_MAX ? INT64_MAX : cpu + e->cpu_usec;
			mem = mem + e->memory_bytes > INT64_MAX ? INT64_MAX : mem + e->memory_bytes;
		}
		sched_jset(u, "cpu_usec", json_integer((json_int_t)cpu));
		sched_jset(u, "memory_bytes", json_integer((json_int_t)mem));
		sched_jset(u, "servers", per);
		sched_jset(o, "usage", u);
	}
	sched_jtime(o, "submitted", j->submit_usec);
	/* the first start stays; each generation's own is in the history */
	sched_jtime(o, "started", j->first_start_usec);
	sched_jtime(o, "generation_started", j->slice_count ? j->generation_usec : 0);
	sched_jtime(o, "ended", j->end_usec);
	sched_jtime(o, "changed", j->change_usec);
	return sched_json_finish(o, ret, ret_len, JSON_INDENT(2));
}

static json_t *run_json(const struct sched_job *j, const struct sched_job_run *r)
{
	json_t *o = json_object(), *place = json_array();
	unsigned npus = 0;

	for (size_t i = 0; i < r->slice_count; i++) {
		const struct sched_run_slice *sl = &r->slices[i];
		json_t *e = json_object(), *ids = json_array();

		for (unsigned k = 0; k < sl->npu_count; k++)
			sched_jpush(ids, json_integer(sl->device_ids[k]));
		sched_jset(e, "server", sched_jstr(sl->server));
		sched_jset(e, "device_ids", ids);
		sched_jset(e, "first_rank", json_integer(sl->first_rank));
		sched_jpush(place, e);
		npus += sl->npu_count;
	}
	sched_jset(o, "job", sched_jstr(j->name));
	sched_jset(o, "generation", json_integer(r->generation));
	/* a generation whose processes are being stopped has its cause but no end yet */
	sched_jset(o, "state", sched_jstr(r->end_usec		? sched_run_end_name(r->end) :
			      r->end != SCHED_RUN_OPEN ? "stopping" :
							 "running"));
	sched_jtime(o, "start", r->start_usec);
	sched_jtime(o, "end", r->end_usec);
	sched_jset(o, "elapsed_sec", r->end_usec ? json_integer((json_int_t)((r->end_usec >
								r->start_usec ?
							r->end_usec - r->start_usec : 0) /
							       1000000u)) :
					     json_null());
	sched_jset(o, "npus", json_integer(npus));
	sched_jset(o, "placement", place);
	sched_jset(o, "exit_code", r->has_exit ? json_integer(r->exit_code) : json_null());
	sched_jset(o, "reason", r->reason ? sched_jstr(r->reason) : json_null());
	return o;
}

int sched_render_job_history(const struct sched_cluster *c, const struct sched_job *j,
			     char **ret, size_t *ret_len)
{
	struct sched_buf b = { 0 };

	(void)c;
	for (size_t i = 0; i < j->run_count && !b.err; i++)
		sched_json_buf_line(&b, run_json(j, &j->runs[i]));
	return sched_buf_finish(&b, ret, ret_len);
}

static json_t *event_json(const struct sched_event *e)
{
	json_t *o = json_object();
	char t[64];

	sched_iso_time(e->time_usec, t, sizeof(t));
	sched_jset(o, "seq", json_integer((json_int_t)e->seq));
	sched_jset(o, "time", sched_jstr(t));
	sched_jset(o, "kind", sched_jstr(sched_event_kind_name(e->kind)));
	sched_jset(o, "job", e->job[0] ? sched_jstr(e->job) : json_null());
	sched_jset(o, "server", e->server[0] ? sched_jstr(e->server) : json_null());
	sched_jset(o, "npu", e->npu >= 0 ? json_integer(e->npu) : json_null());
	sched_jset(o, "state", e->state ? sched_jstr(e->state) : json_null());
	sched_jset(o, "reason", sched_jstr(e->reason));
	return o;
}

char *sched_event_render_line(const struct sched_event *e, size_t extra, size_t *ret_len)
{
	char *line = sched_json_line(event_json(e));
	size_t len;

	if (!line)
		return NULL;
	len = strlen(line);
	if (extra) {
		/* the event's strings go after it, in the same allocation */
		char *n = realloc(line, len + 1 + extra);

		if (!n) {
			free(line);
			return NULL;
		}
		line = n;
	}
	*ret_len = len;
	return line;
}

int sched_render_events(const struct sched_cluster *c, const char *job, char **ret,
			size_t *ret_len)
{
	struct sched_buf b = { 0 };
	uint64_t seq = 0;
	const struct sched_event *e;

	/* lines were rendered when the events were added: this is concatenation */
	while ((e = sched_event_next(c, seq))) {
		seq = e->seq;
		if (job && strcmp(e->job, job) != 0)
			continue;
		if (!e->line)
			continue; /* its line could not be rendered (out of memory) */
		sched_buf_put(&b, e->line, e->line_len);
		sched_buf_put(&b, "\n", 1);
		if (b.err)
			break;
	}
	return sched_buf_finish(&b, ret, ret_len);
}

/* {total, allocated, free, isolated, unavailable} of server @server, or all when < 0 */
static json_t *npu_counts_json(const struct sched_cluster *c, int server)
{
	struct sched_npu_counts n;
	json_t *o = json_object();

	sched_npu_count(c, server, &n);
	sched_jset(o, "total", json_integer(n.total));
	for (int u = 0; u < SCHED_NPU_USE_COUNT; u++)
		sched_jset(o, sched_npu_use_name(u), json_integer(n.by_use[u]));
	return o;
}

int sched_render_cluster_status(const struct sched_cluster *c, char **ret, size_t *ret_len)
{
	json_t *o = json_object(), *jobs = json_object(), *servers = json_object();
	unsigned by_state[SCHED_JOB_STATE_COUNT] = { 0 };
	unsigned by_cond[SCHED_SERVER_CONDITION_COUNT] = { 0 }, schedulable = 0;

	for (size_t i = 0; i < c->job_count; i++)
		by_state[c->jobs[i]->state]++;
	for (size_t i = 0; i < c->server_count; i++) {
		schedulable += sched_server_is_schedulable(c, &c->servers[i]);
		by_cond[sched_server_condition(&c->servers[i])]++;
	}
	sched_jset(o, "cluster", sched_jstr(c->conf->name));
	/* every NPU is in exactly one of allocated, free, isolated, unavailable */
	sched_jset(o, "npus", npu_counts_json(c, -1));
	sched_jset(servers, "total", json_integer((json_int_t)c->server_count));
	sched_jset(servers, "schedulable", json_integer(schedulable));
	/* every server is in exactly one state */
	for (int k = 0; k < SCHED_SERVER_CONDITION_COUNT; k++)
		sched_jset(servers, sched_server_condition_name(k), json_integer(by_cond[k]));
	sched_jset(o, "servers", servers);
	for (int st = 0; st < SCHED_JOB_STATE_COUNT; st++)
		sched_jset(jobs, sched_job_state_name(st), json_integer(by_state[st]));
	sched_jset(o, "jobs", jobs);
	sched_jset(o, "utilization", sched_jratio(c->npus_allocated, c->npus_total));
	sched_jset(o, "event_seq", json_integer((json_int_t)(c->next_event_seq - 1)));
	sched_jset(o, "events_dropped", json_integer((json_int_t)c->events_dropped));
	return sched_json_finish(o, ret, ret_len, JSON_INDENT(2));
}

static const char *server_state_name(const struct sched_server *s)
{
	return sched_server_condition_name(sched_server_condition(s));
}

/* Free NPUs of server @server as every view counts them (0 on a cordoned server). */
static unsigned server_npus_free(const struct sched_cluster *c, unsigned server)
{
	struct sched_npu_counts n;

	sched_npu_count(c, (int)server, &n);
	return n.by_use[SCHED_NPU_FREE];
}

int sched_render_topology(const struct sched_cluster *c, char **ret, size_t *ret_len)
{
	json_t *o = json_object(), *sw = json_array(), *servers = json_array();

	for (size_t i = 0; i < c->switch_count; i++) {
		json_t *e = json_object(), *names = json_array();

		for (size_t s = 0; s < c->server_count; s++)
			if (c->servers[s].switch_index == i)
				sched_jpush(names, sched_jstr(c->servers[s].conf->name));
		sched_jset(e, "name", sched_jstr(c->switch_names[i]));
		sched_jset(e, "servers", names);
		sched_jpush(sw, e);
	}
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];
		const struct conf_server *cs = s->conf;
		json_t *e = json_object(), *npus = json_array();

		for (unsigned d = 0; d < cs->npu_count; d++) {
			const struct sched_npu *n = &s->npus[d];
			json_t *ne = json_object();

			sched_jset(ne, "device_id", json_integer(d));
			sched_jset(ne, "device_ip", sched_npu_device_ip(s, d) ?
							sched_jstr(sched_npu_device_ip(s, d)) :
							json_null());
			sched_jset(ne, "hccs_group",
					    json_integer(d / (cs->type->hccs_group_size ?
								      cs->type->hccs_group_size :
								      cs->npu_count)));
			sched_jset(ne, "health", sched_jstr(sched_health_name(n->health)));
			sched_jset(ne, "isolated", json_boolean(n->isolated));
			sched_jset(ne, "isolation", sched_jstr(sched_isolation_name(n->isolation)));
			sched_jset(ne, "fault", n->isolated && n->fault[0] ? sched_jstr(n->fault) : json_null());
			sched_jset(ne, "state", sched_jstr(sched_npu_use_name(sched_npu_use(c, s, n))));
			sched_jset(ne, "job", n->job ? sched_jstr(n->job->name) : json_null());
			sched_jset(ne, "rank", n->job ? json_integer(n->rank) : json_null());
			sched_jpush(npus, ne);
		}
		sched_jset(e, "name", sched_jstr(cs->name));
		sched_jset(e, "host_ip", sched_jstr(cs->host_ip));
		sched_jset(e, "type", sched_jstr(cs->type->name));
		sched_jset(e, "product", sched_jstr(cs->type->product));
		sched_jset(e, "chip", sched_jstr(cs->type->chip));
		sched_jset(e, "switch", sched_jstr(cs->leaf_switch));
		sched_jset(e, "super_pod",
				    cs->super_pod ? sched_jstr(cs->super_pod) : json_null());
		sched_jset(e, "state", sched_jstr(server_state_name(s)));
		sched_jset(e, "schedulable", json_boolean(sched_server_is_schedulable(c, s)));
		sched_jset(e, "npus_free", json_integer(server_npus_free(c, (unsigned)i)));
		sched_jset(e, "npu_counts", npu_counts_json(c, (int)i));
		sched_jset(e, "npus", npus);
		sched_jpush(servers, e);
	}
	sched_jset(o, "switches", sw);
	sched_jset(o, "servers", servers);
	return sched_json_finish(o, ret, ret_len, JSON_INDENT(2));
}

int sched_render_metrics(const struct sched_cluster *c, uint64_t now_usec, char **ret,
			 size_t *ret_len)
{
	struct sched_buf b = { 0 };
	unsigned by_state[SCHED_JOB_STATE_COUNT] = { 0 };

	for (size_t i = 0; i < c->job_count; i++)
		by_state[c->jobs[i]->state]++;
	/* NPU Exporter's name and encoding: 1 healthy, 0 unhealthy */
	sched_buf_printf(&b, "# HELP npu_chip_info_health_status NPU health: 1 healthy, 0 unhealthy, -1 unknown\n"
		       "# TYPE npu_chip_info_health_status gauge\n");
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];

		for (unsigned d = 0; d < s->conf->npu_count; d++)
			sched_buf_printf(&b, "npu_chip_info_health_status{id=\"%u\",node=\"%s\"} %d\n", d,
				   s->conf->name,
				   s->npus[d].health == SCHED_HEALTH_UNKNOWN ? -1 :
				   s->npus[d].health == SCHED_HEALTH_OK ||
						   s->npus[d].health == SCHED_HEALTH_WARNING ?
									     1 :
									     0);
	}
	/* one sample per NPU with its use and isolation, as topology.json says them */
	sched_buf_printf(&b, "# HELP ascendfs_npu_state NPU use (allocated, free, isolated, "
		       "unavailable) and isolation (none, alarm, fault, manual): 1 per NPU\n"
		       "# TYPE ascendfs_npu_state gauge\n");
	for (size_t i = 0; i < c->server_count; i++) {
		const struct sched_server *s = &c->servers[i];

		for (unsigned d = 0; d < s->conf->npu_count; d++)
			sched_buf_printf(&b, "ascendfs_npu_state{id=\"%u\",node=\"%s\",state=\"%s\","
				       "isolation=\"%s\"} 1\n",
				   d, s->conf->name,
				   sched_npu_use_name(sched_npu_use(c, s, &s->npus[d])),
				   sched_isolation_name(s->npus[d].isolation));
	}
	{
		struct sched_npu_counts n;

		sched_npu_count(c, -1, &n);
		sched_buf_printf(&b, "# HELP ascendfs_npus NPUs by allocation state (allocated, free, "
			       "isolated and unavailable sum to total)\n"
			       "# TYPE ascendfs_npus gauge\n"
			       "ascendfs_npus{state=\"total\"} %u\n", n.total);
		for (int u = 0; u < SCHED_NPU_USE_COUNT; u++)
			sched_buf_printf(&b, "ascendfs_npus{state=\"%s\"} %u\n", sched_npu_use_name(u),
				   n.by_use[u]);
	}
	sched_buf_printf(&b, "# HELP ascendfs_jobs Jobs by state\n# TYPE ascendfs_jobs gauge\n");
	for (int s = 0; s < SCHED_JOB_STATE_COUNT; s++)
		sched_buf_printf(&b, "ascendfs_jobs{state=\"%s\"} %u\n", sched_job_state_name(s),
			   by_state[s]);
	sched_buf_printf(&b, "# HELP ascendfs_recoveries_total Jobs moved off failed NPUs or servers\n"
		       "# TYPE ascendfs_recoveries_total counter\n"
		       "ascendfs_recoveries_total %" PRIu64 "\n",
		   c->recoveries);
	sched_buf_printf(&b, "# HELP ascendfs_preemptions_total Running jobs stopped to make room for "
		       "a higher-priority job or a queue reclaiming borrowed NPUs\n"
		       "# TYPE ascendfs_preemptions_total counter\n"
		       "ascendfs_preemptions_total %" PRIu64 "\n"
		       "# HELP ascendfs_backfilled_total Jobs started ahead of a backfill "
		       "reservation they do not delay\n"
		       "# TYPE ascendfs_backfilled_total counter\n"
		       "ascendfs_backfilled_total %" PRIu64 "\n"
		       "# HELP ascendfs_timeouts_total Jobs stopped at their time_limit\n"
		       "# TYPE ascendfs_timeouts_total counter\n"
		       "ascendfs_timeouts_total %" PRIu64 "\n"
		       "# HELP ascendfs_resizes_total Jobs grown or shrunk (elastic, or a resize)\n"
		       "# TYPE ascendfs_resizes_total counter\n"
		       "ascendfs_resizes_total %" PRIu64 "\n",
		   c->preemptions, c->backfilled, c->timeouts, c->resizes);
	{
		size_t nq = c->conf->queue_count;
		struct sched_queue_usage *u = calloc(nq ? nq : 1, sizeof(*u));

		if (!u)
			b.err = -ENOMEM;
		for (size_t q = 0; u && q < nq; q++)
			sched_queue_usage(c, q, &u[q]);
		/* queue names are validated names: nothing to escape in a label */
		sched_buf_printf(&b, "# HELP ascendfs_queue_used_npus NPUs held by a queue's jobs "
			       "(stopping ones included)\n"
			       "# TYPE ascendfs_queue_used_npus gauge\n");
		for (size_t q = 0; u && q < nq; q++)
			sched_buf_printf(&b, "ascendfs_queue_used_npus{queue=\"%s\"} %u\n",
				   c->conf->queues[q].name, u[q].used_npus);
		sched_buf_printf(&b, "# HELP ascendfs_queue_pending_jobs Jobs of a queue waiting for "
			       "NPUs\n"
			       "# TYPE ascendfs_queue_pending_jobs gauge\n");
		for (size_t q = 0; u && q < nq; q++)
			sched_buf_printf(&b, "ascendfs_queue_pending_jobs{queue=\"%s\"} %u\n",
				   c->conf->queues[q].name, u[q].pending);
		free(u);
	}
	{
		/* services (sched_service.c, sched_disrupt.c); names are validated names */
		static const char *const what[3][2] = {
			{ "replicas", "Instances a service asks for (replicas)" },
			{ "instances_ready", "Instances of a service that run and answer on its "
					     "port (listed in endpoints)" },
			{ "disruptions_allowed", "Instances a preemption or a drain may still take "
						 "from a service (its disruption budget)" },
		};
		struct sched_cluster *mc = (struct sched_cluster *)c; /* lookups change nothing */

		for (int m = 0; m < 3; m++) {
			sched_buf_printf(&b, "# HELP ascendfs_service_%s %s\n"
					     "# TYPE ascendfs_service_%s gauge\n",
					 what[m][0], what[m][1], what[m][0]);
			for (size_t i = 0; i < c->job_count; i++) {
				const struct sched_job *svc = c->jobs[i];
				unsigned v = 0;

				if (svc->state != SCHED_JOB_SERVING || !svc->spec)
					continue;
				if (m == 0)
					v = svc->spec->replicas;
				for (unsigned k = 0; m == 1 && k < svc->spec->replicas; k++) {
					const struct sched_job *j = sched_service_instance(mc, svc, k);

					v += j && sched_job_is_ready(j);
				}
				if (m == 2)
					v = sched_service_disruptions_allowed(mc, svc);
				sched_buf_printf(&b, "ascendfs_service_%s{service=\"%s\"} %u\n",
						 what[m][0], svc->name, v);
			}
		}
	}
	sched_buf_printf(&b, "# HELP ascendfs_servers Servers by state\n# TYPE ascendfs_servers gauge\n");
	{
		unsigned by[SCHED_SERVER_CONDITION_COUNT] = { 0 };

		for (size_t i = 0; i < c->server_count; i++)
			by[sched_server_condition(&c->servers[i])]++;
		for (int k = 0; k < SCHED_SERVER_CONDITION_COUNT; k++)
			sched_buf_printf(&b, "ascendfs_servers{state=\"%s\"} %u\n",
				   sched_server_condition_name(k), by[k]);
	}
	sched_buf_printf(&b, "# HELP ascendfs_events_total Events recorded since start\n"
		       "# TYPE ascendfs_events_total counter\n"
		       "ascendfs_events_total %" PRIu64 "\n",
		   c->next_event_seq - 1);
	(void)now_usec;
	return sched_buf_finish(&b, ret, ret_len);
}

int sched_render_server_npus(const struct sched_cluster *c, unsigned server, char **ret,
			     size_t *ret_len)
{
	const struct sched_server *s;
	struct sched_buf b = { 0 };

	if (server >= c->server_count)
		return -ENOENT;
	s = &c->servers[server];
	sched_buf_printf(&b, "# id device_ip health job rank\n");
	for (unsigned d = 0; d < s->conf->npu_count; d++) {
		const struct sched_npu *n = &s->npus[d];

		sched_buf_printf(&b, "%u %s %s%s%s ", d, sched_npu_device_ip(s, d) ? sched_npu_device_ip(s, d) : "-",
			   sched_health_name(n->health), n->isolated ? ",isolated:" : "",
			   n->isolated ? sched_isolation_name(n->isolation) : "");
		if (n->job)
			sched_buf_printf(&b, "%s %u\n", n->job->name, n->rank);
		else
			sched_buf_printf(&b, "- -\n");
	}
	return sched_buf_finish(&b, ret, ret_len);
}

int sched_render_server_info(const struct sched_cluster *c, unsigned server, uint64_t now_usec,
			     char **ret, size_t *ret_len)
{
	const struct sched_server *s;
	json_t *o;

	if (server >= c->server_count)
		return -ENOENT;
	s = &c->servers[server];
	o = json_object();
	sched_jset(o, "name", sched_jstr(s->conf->name));
	sched_jset(o, "host_ip", sched_jstr(s->conf->host_ip));
	sched_jset(o, "type", sched_jstr(s->conf->type->name));
	sched_jset(o, "product", sched_jstr(s->conf->type->product));
	sched_jset(o, "chip", sched_jstr(s->conf->type->chip));
	sched_jset(o, "npu_count", json_integer(s->conf->npu_count));
	sched_jset(o, "switch", sched_jstr(s->conf->leaf_switch));
	sched_jset(o, "super_pod",
			    s->conf->super_pod ? sched_jstr(s->conf->super_pod) : json_null());
	sched_jset(o, "state", sched_jstr(server_state_name(s)));
	sched_jset(o, "schedulable", json_boolean(sched_server_is_schedulable(c, s)));
	sched_jset(o, "npus_free", json_integer(server_npus_free(c, server)));
	sched_jset(o, "npu_counts", npu_counts_json(c, (int)server));
	sched_jset(o, "jobs", json_integer(s->jobs_running));
	{
		/* the controllers and coordinators it runs, which hold no NPUs and stay
		 * through a drain (their specs name this server): "<service>.<role>" */
		json_t *roles = json_array();

		for (size_t i = 0; i < c->job_count; i++) {
			const struct sched_job *svc = c->jobs[i];

			for (int k = 0; svc->roles && k < SCHED_ROLE_COUNT; k++) {
				char run[2 * CONF_NAME_MAX];

				if (!sched_service_role_run(svc, (enum sched_role)k) ||
				    sched_service_role_server(c, svc, (enum sched_role)k) !=
					    (int)server)
					continue;
				snprintf(run, sizeof(run), "%s.%s", svc->name,
					 sched_role_name((enum sched_role)k));
				sched_jpush(roles, sched_jstr(run));
			}
		}
		sched_jset(o, "roles", roles);
	}
	sched_jset(o, "heartbeat_age_sec",
			    s->last_report_usec && now_usec >= s->last_report_usec ?
				    sched_jsec(now_usec - s->last_report_usec) :
				    json_null());
	sched_jset(o, "agent", s->agent[0] ? sched_jstr(s->agent) : json_null());
	if (s->last_refusal) {
		json_t *r = json_object();

		sched_jset(r, "reason", sched_jstr(s->last_refusal));
		sched_jset(r, "age_sec", sched_jsec(now_usec >= s->last_refusal_usec ?
							  now_usec - s->last_refusal_usec : 0));
		sched_jset(o, "last_refused_report", r);
	} else {
		sched_jset(o, "last_refused_report", json_null());
	}
	return sched_json_finish(o, ret, ret_len, JSON_INDENT(2));
}

int sched_render_server_jobs(const struct sched_cluster *c, unsigned server, char **ret,
			     size_t *ret_len)
{
	struct sched_buf b = { 0 };

	if (server >= c->server_count)
		return -ENOENT;
	sched_buf_printf(&b, "# job generation launch node_rank first_rank npu_count uid gid serial "
			     "attempt kept_from\n");
	for (size_t i = 0; i < c->job_count; i++) {
		const struct sched_job *j = c->jobs[i];

		bool recovering = j->state == SCHED_JOB_RECOVERING && j->ladder.active;

		if (j->roles)
			sched_service_roles_list(c, j, server, &b);

		/* a generation that waits for its checkpoint scan is not to be run yet; one
		 * whose ladder waits for its processes runs on where its servers did not fail */
		if ((j->state != SCHED_JOB_RUNNING || j->resume_scan_pending) && !recovering)
			continue;
		for (size_t k = 0; k < j->slice_count; k++) {
			const struct sched_slice *sl = &j->slices[k];

			if (sl->server != server || (recovering && !sched_ladder_lists(c, j, k)))
				continue;
			sched_buf_printf(&b, "%s %u %s %zu %u %u %u %u %" PRIu64 " %u %u\n",
				   j->name, j->generation,
				   j->spec->launch == CONF_LAUNCH_PER_RANK ? "per-rank" : "msrun", k,
				   sl->first_rank, sl->npu_count, (unsigned)j->uid,
				   (unsigned)j->gid, j->serial, sl->attempt, sl->kept_from);
		}
	}
	return sched_buf_finish(&b, ret, ret_len);
}

int sched_render_server_health(const struct sched_cluster *c, unsigned server, char **ret,
			       size_t *ret_len)
{
	const struct sched_server *s;
	struct sched_buf b = { 0 };

	if (server >= c->server_count)
		return -ENOENT;
	s = &c->servers[server];
	sched_buf_printf(&b, "node %s %s\n", sched_health_name(s->node_health), server_state_name(s));
	for (unsigned d = 0; d < s->conf->npu_count; d++) {
		const struct sched_npu *n = &s->npus[d];

		sched_buf_printf(&b, "npu %u %s", d, sched_health_name(n->health));
		if (n->isolated)
			sched_buf_printf(&b, " isolated:%s", sched_isolation_name(n->isolation));
		if (n->fault[0] && n->isolated)
			sched_buf_printf(&b, " (%s)", n->fault);
		sched_buf_printf(&b, "\n");
	}
	return sched_buf_finish(&b, ret, ret_len);
}

int sched_render_queue_status(const struct sched_cluster *c, const struct conf_queue *q,
			      char **ret, size_t *ret_len)
{
	struct sched_queue_usage u;
	json_t *o = json_object(), *groups = json_array();

	/* @q is one of c->conf->queues: its index is what the usage counters are kept by */
	sched_queue_usage(c, (size_t)(q - c->conf->queues), &u);
	for (size_t i = 0; i < q->group_count; i++)
		sched_jpush(groups, sched_jstr(q->groups[i]));
	sched_jset(o, "queue", sched_jstr(q->name));
	sched_jset(o, "quota_npus", json_integer(q->quota_npus));
	sched_jset(o, "enable_quota_limit", json_boolean(c->conf->enable_quota_limit));
	/* a quota kept but without effect says so (SCHED_QUOTA_OFF_NOTE) */
	sched_jset(o, "quota_enforced",
	     json_boolean(q->quota_npus && c->conf->enable_quota_limit));
	sched_jset(o, "quota_note", q->quota_npus && !c->conf->enable_quota_limit ?
				      sched_jstr("not enforced: resource.enable_quota_limit is false") :
				      json_null());
	sched_jset(o, "priority", json_integer(q->priority));
	sched_jset(o, "weight", json_integer(q->weight));
	sched_jset(o, "may_borrow", json_boolean(q->may_borrow));
	sched_jset(o, "groups", groups);
	/* the job caps users are held to (root and operators are exempt) */
	sched_jset(o, "max_priority", json_integer(q->max_priority));
	sched_jset(o, "max_npus", json_integer(q->max_npus));
	sched_jset(o, "max_time_limit_sec", json_integer(q->max_time_limit_sec));
	sched_jset(o, "default_time_limit_sec", json_integer(q->default_time_limit_sec));
	sched_jset(o, "max_submit_jobs_per_user", json_integer(q->max_submit_jobs_per_user));
	sched_jset(o, "max_submit_jobs", json_integer(q->max_submit_jobs));
	sched_jset(o, "used_npus", json_integer(u.used_npus));
	sched_jset(o, "borrowed_npus", json_integer(u.borrowed_npus));
	sched_jset(o, "pending", json_integer(u.pending));
	sched_jset(o, "running", json_integer(u.running));
	sched_jset(o, "stopping", json_integer(u.stopping));
	return sched_json_finish(o, ret, ret_len, JSON_INDENT(2));
}
