/* SPDX-License-Identifier: MIT */
/*
 * ascendfs: mount the cluster as a filesystem.
 *   ascendfs [-f] [-d] [-s] [-c CONFIG.yaml] [--state-dir DIR] [--ignore-state-errors]
 *            [--log-level L] [--http ADDR:PORT] [-o OPT] MNT
 * Without -c the configuration is ASCENDFS_CONFIG_DEFAULT (config.h:
 * <sysconfdir>/ascendfs/cluster.yaml, /etc/ascendfs/cluster.yaml by default).
 * Exit status: 0 after a clean unmount (SIGTERM, SIGINT or fusermount3 -u), 1 on a
 * configuration or mount error, 2 on a usage error.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fuse.h>
#include <fuse_lowlevel.h>

#include "fs.h"
#include "fs_internal.h"

#define FS_STATE_DIR_DEFAULT "/var/lib/ascendfs"

struct options {
	char *config;
	char *state_dir;
	char *log_level;
	char *http;		/* --http ADDR:PORT (fs_http.c), or NULL: none */
	int no_default_permissions;
	int ignore_state_errors;
	int help;
	int version;
	const char *mountpoint; /* borrowed from argv: the first non-option argument */
};

/*
 * A template "--name %s" takes the next argument or the rest of this one, so
 * "--name=VALUE" arrives as "=VALUE": strip_eq() drops that '=' after parsing. (Listing
 * both "--name=%s" and "--name %s" made the second match too and win with "=VALUE".)
 */
#define OPT(t, p) { t, offsetof(struct options, p), 1 }
static const struct fuse_opt option_spec[] = {
	OPT("-c %s", config),
	OPT("--config %s", config),
	OPT("--state-dir %s", state_dir),
	OPT("--log-level %s", log_level),
	OPT("--http %s", http),
	OPT("--no-default-permissions", no_default_permissions),
	OPT("--ignore-state-errors", ignore_state_errors),
	OPT("-h", help),
	OPT("--help", help),
	OPT("-V", version),
	OPT("--version", version),
	FUSE_OPT_END
};

/* Note the mount point as libfuse will take it (the first non-option), keep every arg. */
static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct options *o = data;

	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT && !o->mountpoint)
		o->mountpoint = arg;
	return 1;
}

static void strip_eq(char *value)
{
	if (value && value[0] == '=')
		memmove(value, value + 1, strlen(value));
}

static void usage(const char *prog)
{
	printf("usage: %s [options] [-c CONFIG.yaml] MOUNTPOINT\n"
	       "\n"
	       "Mount an Ascend NPU cluster as a filesystem: write a job spec into\n"
	       "MOUNTPOINT/jobs/ to place it; read MOUNTPOINT/jobs/<name>/ranktable.json.\n"
	       "\n"
	       "ascendfs options:\n"
	       "    -c, --config=FILE      cluster configuration (ascend_cluster.yaml;\n"
	       "                           default " ASCENDFS_CONFIG_DEFAULT ")\n"
	       "    --state-dir=DIR        durable state (SQLite, ascendfs.db) in DIR,\n"
	       "                           created if missing (default " FS_STATE_DIR_DEFAULT ");\n"
	       "                           \"none\": keep state in memory only (with\n"
	       "                           state: {backend: etcd} in the configuration:\n"
	       "                           only the jobs' output)\n"
	       "    --log-level=LEVEL      error, warning, info (default) or debug; with -f\n"
	       "                           under systemd (stderr is the journal) lines\n"
	       "                           carry their syslog priority instead of a time\n"
	       "    --http=ADDR:PORT       serve /metrics (Prometheus), the read-only files\n"
	       "                           (GET /v1/<path>) and the monitoring panel (GET /)\n"
	       "                           over HTTP there, e.g.\n"
	       "                           127.0.0.1:9101 (off by default; the files name\n"
	       "                           every job and owner: keep it on loopback or a\n"
	       "                           trusted network)\n"
	       "    --ignore-state-errors  start without the records of the state store that\n"
	       "                           cannot be read (without it the daemon refuses to\n"
	       "                           start); they are moved to the store's table\n"
	       "                           unrestored, not deleted\n"
	       "    --no-default-permissions  leave default_permissions out: the daemon's own\n"
	       "                           checks decide who writes what (the kernel then lets\n"
	       "                           every open through; for testing those checks)\n"
	       "    -h, --help             print this help\n"
	       "    -V, --version          print the version\n"
	       "\n"
	       "Defaults added to -o: default_permissions (unless --no-default-permissions),\n"
	       "fsname=ascendfs, subtype=ascendfs, auto_unmount (not with -d), and\n"
	       "allow_other when run as root.\n"
	       "\n",
	       prog);
}

/* mkdir -p @path (mode 0700 for what it creates); fails unless a directory results. */
static int make_dirs(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -1;
	if (stat(buf, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/* Does @dir (absolute or relative) resolve into the mount point @mnt (resolved)? */
static bool state_dir_is_inside(const char *dir, const char *mnt)
{
	char abs[2 * PATH_MAX], cwd[PATH_MAX];

	if (dir[0] == '/')
		snprintf(abs, sizeof(abs), "%s", dir);
	else if (getcwd(cwd, sizeof(cwd)))
		snprintf(abs, sizeof(abs), "%s/%s", cwd, dir);
	else
		return false;
	/* the resolver that keeps checkpoint_dir out of the mount (fs_checkpoint.c) */
	return fs_checkpoint_dir_check(abs, mnt, 0, NULL, 0) == -EXDEV;
}

/*
 * Open the store in @dir, restore what it holds (records that cannot be read refuse the
 * start, or are set aside with @ignore_errors), and start the committer. A
 * predecessor whose mount was just aborted may still be exiting, holding the directory:
 * wait up to @busy_msec for it.
 */
static int open_state(struct fs_ctx *ctx, const char *dir, bool ignore_errors,
		      unsigned busy_msec)
{
	bool etcd = ctx->cluster->conf->state_backend == CONF_STATE_ETCD;
	struct fs_restore_stats stats;
	char why[SCHED_REASON_MAX];
	struct timespec t0, t1;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (etcd) {
		/* while another head leads, this one stands by: it mounts a read-only view
		 * and takes over when that head's lease ends (fs_standby.c); so does a head
		 * restarted after a crash, until its old lease ends */
		fs_log(ctx, 2, "state in etcd %s at %s: taking the leadership",
		       ctx->cluster->conf->etcd_prefix, ctx->cluster->conf->etcd_servers);
		r = fs_store_open_etcd(ctx, &ctx->store, why);
		if (r == 0)
			r = fs_store_lead(ctx->store, 0, NULL, NULL, why);
		if (r == -EBUSY) {
			fs_log(ctx, 2, "%s: this head stands by, serving a read-only view of the "
				       "state, and takes over when that head's lease ends", why);
			r = fs_standby_init(ctx, ignore_errors, why);
			if (r < 0) {
				fprintf(stderr, "ascendfs: %s\n", r == -ENOMEM ? "out of memory" : why);
				return r;
			}
			return 0;
		}
	}
	for (unsigned waited = 0; !etcd; waited += 100) {
		r = fs_store_open(dir, ctx->cluster->server_count, &ctx->store, why);
		if (r != -EBUSY || waited >= busy_msec)
			break;
		usleep(100000);
	}
	if (r == 0)
		r = fs_store_restore(ctx, fs_now_usec(), ignore_errors, &stats, why);
	if (r < 0) {
		fprintf(stderr, "ascendfs: %s\n", r == -ENOMEM ? "out of memory" : why);
		/* -EBADMSG: @why says what to do; the file itself is sound */
		if (!etcd && (r == -EIO || r == -EUCLEAN))
			fprintf(stderr, "ascendfs: nothing was changed; if the file is damaged, "
					"move %s/ascendfs.db* aside to start with an empty state "
					"(the jobs it holds are then forgotten)\n", dir);
		return r;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fs_log(ctx, 2, "state %s: restored %zu %s (%zu active), %zu server "
		       "%s, %zu %s, %zu accounting %s, %zu staged %s in %.0f ms%s",
	       fs_store_name(ctx->store), stats.jobs, conf_plural(stats.jobs, "job", "jobs"),
	       stats.active,
	       stats.servers, conf_plural(stats.servers, "record", "records"), stats.events,
	       conf_plural(stats.events, "event", "events"), stats.accounting,
	       conf_plural(stats.accounting, "record", "records"), stats.staged,
	       conf_plural(stats.staged, "upload", "uploads"),
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
	       stats.set_aside ? "; records that cannot be read were set aside, see above" : "");
	r = fs_store_start(ctx);
	if (r < 0)
		fprintf(stderr, "ascendfs: cannot start the state writer: %s\n", strerror(-r));
	return r;
}

/* The milliseconds a test asks for in environment variable @name (at most a minute); 0. */
static unsigned test_msec(const char *name)
{
	const char *v = getenv(name);

	return v ? (unsigned)strtoul(v, NULL, 10) % 60001 : 0;
}

static int parse_log_level(const char *s)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	if (!s)
		return 2;
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

/* libfuse's default of -o max_threads, and the daemon's */
#define FS_LIBFUSE_MAX_THREADS 10
#define FS_MAX_THREADS 64

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cl = { 0 };
	struct options o = { 0 };
	struct conf_cluster *conf = NULL;
	struct conf_error err;
	struct fs_ctx ctx = { 0 };
	struct fuse_session *se = NULL;
	char mnt[PATH_MAX], msg[1024];
	bool config_defaulted = false, max_threads_given = false;
	int ret = 1, r, cleared, http_fd = -1;

	for (int i = 1; i < argc; i++)
		if (strstr(argv[i], "max_threads="))
			max_threads_given = true;

	/*
	 * Renders and snapshots of a large cluster run to megabytes and come and go with
	 * open files, on many FUSE threads: a fixed threshold keeps every allocation of
	 * 128 KiB or more in its own mapping, returned to the system when freed. glibc's
	 * default raises the threshold after the first such free, and the freed blocks
	 * then stayed in the threads' arenas (issue 15 item 4: 8.2 GiB after the
	 * descriptors had closed).
	 */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	/*
	 * glibc makes up to 8 arenas a core for threads that contend, and each arena
	 * keeps its own freed holes: with 32 writers on 2 cores that was 10 MiB more RSS
	 * after 10,000 submissions (52.6 against 42.9 MiB with 2 arenas; issue 16). One
	 * arena a core keeps contention low; MALLOC_ARENA_MAX in the environment wins.
	 */
	if (!getenv("MALLOC_ARENA_MAX")) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		mallopt(M_ARENA_MAX, cpus > 2 ? (int)(cpus < 64 ? cpus : 64) : 2);
	}

	/* the helper that announces the daemon's changes to inotify (fs_notify.c) */
	if (argc >= 2 && argc <= 5 && strcmp(argv[1], "--notify-helper") == 0)
		return fs_notify_helper_main(argc > 2 ? argv[2] : NULL, argc > 3 ? argv[3] : NULL,
					     argc > 4 ? argv[4] : NULL);
	if (fuse_opt_parse(&args, &o, option_spec, opt_proc) < 0)
		return 2;
	strip_eq(o.config);
	strip_eq(o.state_dir);
	strip_eq(o.log_level);
	strip_eq(o.http);
	if (o.help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out_args;
	}
	if (o.version) {
		printf("ascendfs %s (libfuse %s)\n", ASCENDFS_VERSION, fuse_pkgversion());
		ret = 0;
		goto out_args;
	}
	ctx.log_level = parse_log_level(o.log_level);
	if (ctx.log_level < 0) {
		fprintf(stderr, "ascendfs: --log-level: \"%s\" is not a level; use error, "
				"warning, info or debug\n", o.log_level);
		ret = 2;
		goto out_args;
	}
	if (!o.mountpoint) {
		fprintf(stderr, "usage: %s [options] [-c CONFIG.yaml] MOUNTPOINT (see --help)\n",
			argv[0]);
		ret = 2;
		goto out_args;
	}
	if (!o.config) {
		config_defaulted = true;
		o.config = strdup(ASCENDFS_CONFIG_DEFAULT);
		if (!o.config)
			goto out_cl;
	}
	r = conf_cluster_load(o.config, &conf, &err);
	if (r < 0) {
		fprintf(stderr, "ascendfs: %s\n", conf_error_format(&err, msg, sizeof(msg)));
		if (config_defaulted && access(o.config, F_OK) < 0)
			fprintf(stderr, "ascendfs: no -c was given, so the default configuration "
					"%s was read; give -c CONFIG.yaml, or install one there "
					"(`meson install` puts the example cluster there)\n",
				o.config);
		goto out_cl;
	}
	/* listening before the fork: a port taken is said here, not in the log */
	if (o.http && fs_http_listen(o.http, &http_fd, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "ascendfs: %s\n", msg);
		conf_cluster_free(conf);
		goto out_cl;
	}
	if (!o.state_dir)
		o.state_dir = strdup(FS_STATE_DIR_DEFAULT);
	if (!o.state_dir) {
		conf_cluster_free(conf);
		goto out_cl;
	}
	/* before libfuse's parser: it realpath()s the mount point, which would wait
	 * forever on a wedged predecessor's mount */
	cleared = fs_mountpoint_prepare(o.mountpoint, o.state_dir, mnt, sizeof(mnt));
	if (cleared < 0) {
		conf_cluster_free(conf);
		goto out_cl;
	}
	if (strcmp(o.state_dir, "none") != 0 && state_dir_is_inside(o.state_dir, mnt)) {
		fprintf(stderr, "ascendfs: --state-dir %s lies inside the mount point %s: the "
				"mount would hide it, and the daemon never reads its own mount; "
				"give a directory outside it\n", o.state_dir, mnt);
		conf_cluster_free(conf);
		goto out_cl;
	}
	if (strcmp(o.state_dir, "none") != 0 && make_dirs(o.state_dir) < 0) {
		fprintf(stderr, "ascendfs: --state-dir %s: %s; give a directory that exists or "
				"can be created (or --state-dir=none to keep state in memory)\n",
			o.state_dir, strerror(errno));
		conf_cluster_free(conf);
		goto out_cl;
	}
	if (fuse_parse_cmdline(&args, &cl) != 0 || !cl.mountpoint) {
		conf_cluster_free(conf);
		ret = 2;
		goto out_cl;
	}
	r = conf_cluster_render_yaml(conf, &ctx.config_text, &ctx.config_len);
	if (r == 0)
		r = sched_cluster_new(conf, &ctx.cluster); /* steals conf */
	else
		conf_cluster_free(conf);
	if (r < 0) {
		fprintf(stderr, "ascendfs: %s\n", strerror(-r));
		goto out_ctx;
	}
	ctx.conf = ctx.cluster->conf; /* a standby's own from fs_standby_init() on */
	ctx.mount_path = strdup(mnt);
	ctx.config_path = strdup(o.config);
	ctx.multithreaded = !cl.singlethread;
	/* tests only: test_mount.sh's slow-but-alive daemon (a slow answer to the GETATTR a
	 * newcomer's probe sends, fs_mountpoint.c) and busy daemon (the notify helper's
	 * requests answered late); test_uploads.sh's RELEASE that comes late after its close,
	 * and a health report that holds ctx->lock;
	 * test_clock.sh's restore of a large state */
	ctx.test_slow_root_getattr_ms = test_msec("ASCENDFS_TEST_SLOW_GETATTR_MS");
	ctx.test_slow_helper_ms = test_msec("ASCENDFS_TEST_SLOW_HELPER_MS");
	ctx.test_slow_release_ms = test_msec("ASCENDFS_TEST_SLOW_RELEASE_MS");
	ctx.test_locked_health_ms = test_msec("ASCENDFS_TEST_LOCKED_HEALTH_MS");
	ctx.test_slow_restore_ms = test_msec("ASCENDFS_TEST_SLOW_RESTORE_MS");
	ctx.test_slow_commit_ms = test_msec("ASCENDFS_TEST_SLOW_COMMIT_MS");
	pthread_mutex_init(&ctx.lock, NULL);
	pthread_mutex_init(&ctx.jobs_dir_mu, NULL);
	fs_cond_init(&ctx.uploads_cv);
	fs_cond_init(&ctx.handles_cv);
	fs_cond_init(&ctx.notify_cv);
	fs_cond_init(&ctx.stop_cv);
	fs_cond_init(&ctx.scan_cv);
	fs_cond_init(&ctx.resume_cv);
	/* new generations wait for a look into their checkpoint_dir (fs_notify.c) */
	ctx.cluster->scan_resume_at_start = true;
	fs_cond_init(&ctx.commit_cv);
	fs_cond_init(&ctx.sweep_cv);
	/* etcd (`state: {backend: etcd}`) whatever --state-dir says: it still holds the
	 * jobs' output */
	if ((strcmp(o.state_dir, "none") != 0 ||
	     ctx.cluster->conf->state_backend == CONF_STATE_ETCD) &&
	    open_state(&ctx, o.state_dir, o.ignore_state_errors, cleared ? 5000 : 0) < 0)
		goto out_ctx;
	/* after the restore (its pass and staged submissions run at once): from here, the
	 * requests that arrive together share one scheduling pass, run by the committer
	 * before each batch or, without a store, before a request answers (fs_commit.c) */
	pthread_mutex_lock(&ctx.lock);
	sched_cluster_set_deferred_passes(ctx.cluster, true);
	pthread_mutex_unlock(&ctx.lock);
	/* after the restore: the logs of jobs it brought back are kept, others removed */
	if (fs_joblogs_open(&ctx, strcmp(o.state_dir, "none") != 0 ? o.state_dir : NULL, msg,
			    sizeof(msg)) < 0) {
		fprintf(stderr, "ascendfs: %s\n", msg);
		goto out_store;
	}

	/* libfuse adds subtype=<program name> itself */
	fuse_opt_add_arg(&args, o.no_default_permissions ? "-ofsname=ascendfs" :
							   "-odefault_permissions,fsname=ascendfs");
	if (!cl.debug)
		fuse_opt_add_arg(&args, "-oauto_unmount");
	if (geteuid() == 0)
		fuse_opt_add_arg(&args, "-oallow_other");

	if (fs_inodes_init(&ctx.inodes) < 0)
		goto out_store;
	se = fuse_session_new(&args, fs_operations(), sizeof(struct fuse_lowlevel_ops), &ctx);
	if (!se)
		goto out_store;
	/*
	 * libfuse forks fusermount3, and its child allocates (setenv) before its exec: no
	 * other thread may hold an allocator's lock at the fork. glibc's malloc takes care
	 * of that; AddressSanitizer's does not, and a child forked while the committer
	 * allocated hung (seen once in integration_crash): the committer, the only other
	 * thread now, stops over the mount (having written what is left) and starts again
	 * after it, and after daemonizing, which forks too.
	 */
	fs_store_stop(&ctx);
	if (fuse_session_mount(se, mnt) != 0)
		goto out_fuse;
	/* the kernel may be told of stale attributes from now on */
	fs_inodes_set_session(&ctx.inodes, se);
	{
		/* the device that marks "inside the mount" for checkpoint_dir (a bind mount
		 * of it too), before any thread or request can look */
		unsigned ma = 0, mi = 0;

		if (fs_mountinfo_find("/proc/self/mountinfo", mnt, &ma, &mi) > 0)
			ctx.mount_dev = makedev(ma, mi);
		else
			fs_log(&ctx, 1, "%s is not in /proc/self/mountinfo: a checkpoint_dir in a "
					"bind mount of it is not recognised", mnt);
	}
	/* threads do not survive fork(): without -f the committer starts in the daemonized
	 * child, or every close would wait for a commit that never comes */
	if (fuse_daemonize(cl.foreground) != 0)
		goto out_unmount;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_unmount;
	/* lead; a standby (etcd: another head leads) starts its threads below, once this
	 * thread no longer reads the cluster they replace */
	if (!ctx.standby && fs_lead_start(&ctx, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "ascendfs: %s\n", msg);
		goto out_signals;
	}
	r = fs_mountwatch_start(&ctx);
	if (r < 0) {
		/* nothing would end the notify helper, whose copy of the mount would keep
		 * the daemon running after fusermount3 -u */
		fs_notify_helper_release(&ctx);
		fs_log(&ctx, 1, "cannot start the mount watch (%s): inotify watchers see only "
				"their own changes, and a copy of the mount in another mount "
				"namespace would keep the daemon running after fusermount3 -u",
		       strerror(-r));
	}
	if (http_fd >= 0) {
		r = fs_http_start(&ctx, http_fd, o.http);
		if (r < 0) {
			fs_log(&ctx, 0, "--http %s: cannot start serving: %s", o.http, strerror(-r));
			goto out_signals;
		}
		http_fd = -1; /* the server's now */
	}
	if (fs_memory_start(&ctx) < 0)
		fs_log(&ctx, 1, "cannot start the memory trimmer: freed memory stays with the "
				"daemon (a higher RSS, nothing else)");
	fs_log(&ctx, 2, "mounted %s: %zu %s, %u %s, config %s", mnt, ctx.cluster->server_count,
	       conf_plural(ctx.cluster->server_count, "server", "servers"),
	       ctx.cluster->npus_total, conf_plural(ctx.cluster->npus_total, "NPU", "NPUs"), o.config);
	if (ctx.cluster->conf->operator_group) {
		gid_t g;

		if (fs_operator_gid(ctx.cluster->conf, &g) < 0)
			fs_log(&ctx, 1, "operator_group %s is not a known group (getent group %s): "
					"until it is, only root writes node health, ctl and quotas",
			       ctx.cluster->conf->operator_group, ctx.cluster->conf->operator_group);
		else
			fs_log(&ctx, 2, "operator_group %s (gid %u) may write node health, node and "
					"cluster ctl and queue quotas",
			       ctx.cluster->conf->operator_group, (unsigned)g);
	}
	/* settings that have no effect: in the log and at the end of cluster/config */
	if (fs_config_warnings(ctx.cluster->conf, &ctx.config_warnings) > 0) {
		for (char *l = ctx.config_warnings, *e; (e = strchr(l, '\n')); l = e + 1)
			fs_log(&ctx, 1, "%.*s", (int)(e - l - 11), l + 11);
		pthread_mutex_lock(&ctx.lock);
		if (fs_config_refresh(&ctx) < 0)
			fs_log(&ctx, 1, "cluster/config shows no warnings: out of memory");
		pthread_mutex_unlock(&ctx.lock);
	}
	r = fs_standby_start(&ctx);
	if (r < 0) {
		fprintf(stderr, "ascendfs: cannot start the standby's threads: %s\n", strerror(-r));
		fs_http_stop(&ctx);
		goto out_signals;
	}
	if (cl.singlethread) {
		r = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *lc = fuse_loop_cfg_create();

		fuse_loop_cfg_set_clone_fd(lc, cl.clone_fd);
		if (cl.max_idle_threads != UINT_MAX) /* UINT_MAX: not given on the command line */
			fuse_loop_cfg_set_idle_threads(lc, cl.max_idle_threads);
		/* a request that changed state holds its thread until its batch is durable
		 * (an fsync, or etcd's quorum): with libfuse's 10 threads, 10 writers waiting
		 * for a batch left no thread for anybody else, readers included, nor for the
		 * submissions the next batch would gather. More unless -o max_threads says
		 * otherwise */
		if (cl.max_threads == FS_LIBFUSE_MAX_THREADS && !max_threads_given)
			cl.max_threads = FS_MAX_THREADS;
		if (cl.max_threads && cl.max_threads <= 100000)
			fuse_loop_cfg_set_max_threads(lc, cl.max_threads);
		r = fuse_session_loop_mt(se, lc);
		fuse_loop_cfg_destroy(lc);
	}
	/* the loop returns the signal that ended it: SIGTERM, SIGINT and SIGHUP are clean */
	ret = r == 0 || r == SIGTERM || r == SIGINT || r == SIGHUP ? 0 : 1;
	/* the mount went from this namespace and the watch aborted the copies that lived on:
	 * the unmount that was asked for, whatever the loop's last read returned */
	if (ret && fs_mountwatch_aborted()) {
		fs_log(&ctx, 2, "the session loop ended with %d after the mount watch aborted "
				"the connection: a clean stop", r);
		ret = 0;
	}
	/* the kernel tears the connection down at the unmount; a worker whose read of a
	 * request raced with that gets ECONNABORTED rather than ENODEV (libfuse then logs
	 * "reading device: Software caused connection abort"): seen after a burst, with
	 * many requests in flight. The mount gone from here, it is the stop that was asked
	 * for; with the mount still here, someone aborted a live daemon: an error */
	if (ret && r == -ECONNABORTED && fs_mountwatch_unmounted()) {
		fs_log(&ctx, 2, "the session loop ended with ECONNABORTED after the unmount: a "
				"clean stop");
		ret = 0;
	}
	/* a takeover under way ends first (then this head leads, and stops as a leader) */
	fs_standby_stop(&ctx);
	if (fs_store_deposed(ctx.store)) {
		fs_log(&ctx, 0, "this head is no longer the leader: exiting with status 1");
		ret = 1;
	}
	if (fs_standby_failed(&ctx)) {
		fs_log(&ctx, 0, "this head could not take over: exiting with status 1");
		ret = 1;
	}
	fs_http_stop(&ctx);
	fs_log(&ctx, 2, "unmounting %s", mnt);
	/* how well requests shared their passes, and how many passes tried only the new
	 * jobs (sched_cluster_set_incremental): a cost that grows with the jobs held shows
	 * here as few resumed */
	pthread_mutex_lock(&ctx.lock);
	fs_log(&ctx, 2, "scheduling passes: %llu for %llu requests, %llu of them resumed",
	       (unsigned long long)ctx.cluster->passes_run,
	       (unsigned long long)ctx.cluster->pass_requests,
	       (unsigned long long)ctx.cluster->passes_incremental);
	pthread_mutex_unlock(&ctx.lock);
out_signals:
	fs_standby_stop(&ctx);
	fuse_remove_signal_handlers(se);
out_unmount:
	/* no invalidation from here on: the unmount closes the session's descriptor, and
	 * its number may then be a file of ours (the store's journal) */
	fs_inodes_set_session(&ctx.inodes, NULL);
	/* unmount first: the notifier may be blocked in a syscall on the mount */
	fuse_session_unmount(se);
	fs_mountwatch_stop(&ctx);
	fs_memory_stop(&ctx);
	if (!fs_threads_stop(&ctx)) {
		fs_store_stop(&ctx); /* what is committed is written; then leave it to exit() */
		fuse_session_destroy(se);
		goto out_cl; /* a thread may still touch the state */
	}
out_fuse:
	fuse_session_destroy(se);
out_store:
	fs_store_stop(&ctx); /* writes what is left */
out_ctx:
	fs_standby_free(&ctx);
	fs_store_close(ctx.store);
	fs_stage_free_all(&ctx);
	fs_handles_free_all(&ctx);
	fs_whatif_free();
	fs_joblogs_free(&ctx);
	fs_cache_clear(&ctx);
	sched_cluster_free(ctx.cluster);
	fs_uploads_free_all(&ctx);
	fs_inodes_release(&ctx.inodes);
	free(ctx.config_text);
	free(ctx.config_warnings);
	free(ctx.mount_path);
	free(ctx.config_path);
out_cl:
	if (http_fd >= 0)
		close(http_fd);
	free(cl.mountpoint);
out_args:
	free(o.config);
	free(o.state_dir);
	free(o.log_level);
	free(o.http);
	fuse_opt_free_args(&args);
	return ret;
}
