/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of job arrays (sched/sched_array.c), Slurm's sbatch --array: an array record
 * and its elements <array>.<index>, made in index order at most the throttle at once;
 * the array ends when every element has, completed only when all completed. Each step
 * checks sched_check_invariants().
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ascend_sched.h"
#include "sched_fixture.h"
#include "test_util.h"

/* A spec @name of @npus NPUs per element, `array: @set`. */
static struct conf_job_spec *array_spec(const char *name, unsigned npus, const char *set)
{
	struct conf_job_spec *s = fx_spec(name, npus);
	char why[256] = "";

	if (conf_job_array_parse(set, &s->array, why, sizeof(why)) < 0)
		fail_msg("array %s: %s", set, why);
	s->max_restarts = 0;
	return s;
}

/* @s waiting for job @name to complete, or to end however with @any (its `after:`). */
static struct conf_job_spec *waits_for(struct conf_job_spec *s, const char *name, bool any)
{
	return fx_after(s, name, any);
}

static struct sched_job *element(struct sched_cluster *c, const char *array, unsigned i)
{
	char name[CONF_NAME_MAX + 1];

	snprintf(name, sizeof(name), "%s.%u", array, i);
	return sched_cluster_find_job(c, name);
}

/* Element @i of @array ends: completes (@code 0) or its process exits @code. */
static void end_element(struct sched_cluster *c, const char *array, unsigned i, int code)
{
	struct sched_job *j = element(c, array, i);
	char why[SCHED_REASON_MAX] = "";

	assert_non_null(j);
	assert_int_equal(j->state, SCHED_JOB_RUNNING);
	if (code == 0) {
		assert_int_equal(fx_complete(c, j->name, FX_UID, fx_now()), 0);
	} else {
		assert_int_equal(sched_job_process_exit(c, j->name, FX_UID, j->generation,
							fx_server_name(c, j->slices[0].server),
							-1, code, fx_now(), why),
				 0);
		fx_report_gone(c, j->name, fx_now());
	}
	sched_array_tick(c, fx_now());
	fx_check(c);
}

static json_t *array_status(const struct sched_cluster *c, const struct sched_job *a)
{
	char *text = NULL;
	size_t len;
	json_t *st, *arr;

	assert_int_equal(sched_render_job_status_json(c, a, &text, &len), 0);
	st = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(st);
	arr = json_incref(json_object_get(st, "array"));
	json_decref(st);
	assert_non_null(arr);
	return arr;
}

static json_int_t count_of(const json_t *arr, const char *key)
{
	return json_integer_value(json_object_get(arr, key));
}

/* %2: two elements at a time, in index order; each end makes the next; the elements
 * have their index in their environment; the array completes with the last. */
static void test_array_throttle_makes_elements_in_turn(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a;
	char *env = NULL;
	size_t len;
	json_t *arr;

	(void)state;
	a = fx_submit_spec(c, array_spec("sweep", 8, "0-4%2"), FX_UID);
	assert_int_equal(a->state, SCHED_JOB_ARRAY);
	assert_int_equal(a->slice_count, 0);
	assert_int_equal(element(c, "sweep", 0)->state, SCHED_JOB_RUNNING);
	assert_int_equal(element(c, "sweep", 1)->state, SCHED_JOB_RUNNING);
	assert_null(element(c, "sweep", 2)); /* the throttle: not made yet */
	assert_non_null(strstr(a->reason, "2 active, 3 waiting"));
	assert_int_equal(sched_render_job_env(c, element(c, "sweep", 1), NULL, &env, &len), 0);
	assert_non_null(strstr(env, "ASCEND_ARRAY_INDEX='1'\n"));
	assert_non_null(strstr(env, "ASCEND_ARRAY_JOB='sweep'\n"));
	assert_non_null(strstr(env, "ASCEND_ARRAY_COUNT='5'\n"));
	assert_non_null(strstr(env, "ASCEND_ARRAY_MAX='4'\n"));
	free(env);
	/* the elements' specs are plain jobs' */
	assert_int_equal(element(c, "sweep", 0)->spec->array.count, 0);
	assert_false(sched_job_is_array(element(c, "sweep", 0)));
	assert_true(sched_job_is_array_element(element(c, "sweep", 0)));

	end_element(c, "sweep", 1, 0);
	assert_int_equal(element(c, "sweep", 2)->state, SCHED_JOB_RUNNING);
	assert_null(element(c, "sweep", 3));
	arr = array_status(c, a);
	assert_int_equal(count_of(arr, "completed"), 1);
	assert_int_equal(count_of(arr, "running"), 2);
	assert_int_equal(count_of(arr, "waiting"), 2);
	assert_string_equal(json_string_value(json_object_get(json_object_get(arr, "elements"),
							      "1")), "completed");
	assert_string_equal(json_string_value(json_object_get(arr, "indexes")), "0-4");
	json_decref(arr);
	end_element(c, "sweep", 0, 0);
	end_element(c, "sweep", 2, 0);
	end_element(c, "sweep", 3, 0);
	assert_int_equal(a->state, SCHED_JOB_ARRAY);
	end_element(c, "sweep", 4, 0);
	assert_int_equal(a->state, SCHED_JOB_COMPLETED);
	assert_non_null(strstr(a->reason, "every element completed (5)"));
	sched_cluster_free(c);
}

/* An element that fails does not stop the others; the array fails at its end, and a job
 * that waited for it to complete (afterok) is cancelled, one that waited for its end
 * (afterany) starts. */
static void test_array_failed_element_fails_array_at_end(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *ok = fx_spec("report", 8), *any = fx_spec("cleanup", 8);
	struct sched_job *a;

	(void)state;
	a = fx_submit_spec(c, array_spec("sweep", 8, "1,3,5"), FX_UID);
	waits_for(ok, "sweep", false);
	waits_for(any, "sweep", true);
	fx_submit_spec(c, ok, FX_UID);
	fx_submit_spec(c, any, FX_UID);
	assert_null(element(c, "sweep", 0));
	end_element(c, "sweep", 3, 1);
	assert_int_equal(element(c, "sweep", 3)->state, SCHED_JOB_FAILED);
	assert_int_equal(a->state, SCHED_JOB_ARRAY);
	end_element(c, "sweep", 1, 0);
	end_element(c, "sweep", 5, 0);
	assert_int_equal(a->state, SCHED_JOB_FAILED);
	assert_non_null(strstr(a->reason, "1 of 3 elements did not complete: 1 failed"));
	assert_int_equal(sched_cluster_find_job(c, "report")->state, SCHED_JOB_CANCELLED);
	assert_int_equal(sched_cluster_find_job(c, "cleanup")->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

/* Cancelling the array cancels its active elements and makes no more; an element's own
 * cancel ends that element only. */
static void test_array_cancel(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a;
	json_t *arr;

	(void)state;
	a = fx_submit_spec(c, array_spec("sweep", 8, "0-9%3"), FX_UID);
	assert_int_equal(fx_cancel(c, "sweep.1", FX_UID, fx_now()), 0);
	sched_array_tick(c, fx_now());
	assert_int_equal(element(c, "sweep", 1)->state, SCHED_JOB_CANCELLED);
	assert_int_equal(element(c, "sweep", 3)->state, SCHED_JOB_RUNNING); /* the next */
	assert_int_equal(a->state, SCHED_JOB_ARRAY);
	/* the array is not controlled as a job that runs */
	{
		char why[SCHED_REASON_MAX] = "";

		assert_int_equal(sched_job_hold(c, "sweep", FX_UID, fx_now(), why), -EBUSY);
		assert_non_null(strstr(why, "is a job array"));
	}

	assert_int_equal(sched_job_cancel(c, "sweep", FX_UID, fx_now()), 0);
	assert_int_equal(a->state, SCHED_JOB_CANCELLED);
	for (unsigned i = 0; i < 4; i++)
		fx_report_gone(c, element(c, "sweep", i)->name, fx_now());
	sched_array_tick(c, fx_now());
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(element(c, "sweep", i)->state, SCHED_JOB_CANCELLED);
	assert_null(element(c, "sweep", 4));
	assert_int_equal(c->npus_allocated, 0);
	arr = array_status(c, a);
	assert_int_equal(count_of(arr, "waiting"), 0);
	assert_int_equal(count_of(arr, "not_made"), 6);
	assert_int_equal(count_of(arr, "cancelled"), 4);
	assert_string_equal(json_string_value(json_object_get(json_object_get(arr, "elements"),
							      "9")), "not made");
	json_decref(arr);
	fx_check(c);
	sched_cluster_free(c);
}

/* While the array is active its elements' names are its own; an array whose element
 * name is an active job's, or another user's record, is refused, naming it. */
static void test_array_names(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	fx_run(c, "grid.2", 8);
	assert_int_equal(sched_job_submit(c, array_spec("grid", 8, "0-3"), FX_UID, FX_GID,
					  fx_now(), why, NULL),
			 -EEXIST);
	assert_non_null(strstr(why, "element 2 is named grid.2"));
	assert_null(sched_cluster_find_job(c, "grid"));

	fx_submit_spec(c, array_spec("sweep", 8, "0-9:3%1"), FX_UID);
	why[0] = '\0';
	assert_int_equal(sched_job_submit(c, fx_spec("sweep.6", 8), FX_UID, FX_GID, fx_now(),
					  why, NULL),
			 -EEXIST);
	assert_non_null(strstr(why, "element of array sweep"));
	/* not an index of its set, nor an element's spelling: a name as any */
	fx_submit(c, "sweep.4", 8);
	fx_submit(c, "sweep.03", 8);
	sched_cluster_free(c);
}

/* A full job table: the next element waits, saying why, and is made when a record
 * frees; nothing is lost. */

static void test_array_waits_for_a_record(void **state)
{
	struct fx_opts o = { .servers = 4,
			     .cluster_extra = "  max_job_count: 4\n  max_job_count_per_user: 4\n" };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a;

	(void)state;
	a = fx_submit_spec(c, array_spec("sweep", 8, "0-3"), FX_UID);
	assert_non_null(element(c, "sweep", 1));
	assert_null(element(c, "sweep", 2));
	assert_non_null(strstr(a->reason, "element 2 not made yet"));
	assert_non_null(strstr(a->reason, "job records"));
	assert_true(c->arrays_dirty);
	sched_array_tick(c, fx_now());
	assert_null(element(c, "sweep", 2));
	end_element(c, "sweep", 0, 0);
	assert_int_equal(element(c, "sweep", 2)->state, SCHED_JOB_RUNNING);
	end_element(c, "sweep", 1, 0);
	/* the table is full: the first element's finished record is dropped for the last */
	assert_null(element(c, "sweep", 0));
	assert_int_equal(element(c, "sweep", 3)->state, SCHED_JOB_RUNNING);
	end_element(c, "sweep", 2, 0);
	end_element(c, "sweep", 3, 0);
	assert_int_equal(a->state, SCHED_JOB_COMPLETED);
	sched_cluster_free(c);
}

/* An array's record counts as one of its owner's jobs and stands for its first element:
 * at max_job_count_per_user 1 its elements run one after another, never waiting for the
 * array itself, and the owner has no room for another job meanwhile. */
static void test_array_at_owner_limit_goes_on(void **state)
{
	struct fx_opts o = { .servers = 4, .cluster_extra = "  max_job_count_per_user: 1\n" };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a;
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	a = fx_submit_spec(c, array_spec("sweep", 8, "0-2"), FX_UID);
	assert_int_equal(element(c, "sweep", 0)->state, SCHED_JOB_RUNNING);
	assert_null(element(c, "sweep", 1));
	assert_non_null(strstr(a->reason, "max_job_count_per_user"));
	/* the element holds the owner's one job: another submission waits its turn */
	assert_int_equal(sched_job_submit(c, fx_spec("other", 8), FX_UID, FX_GID, fx_now(), why,
					  NULL),
			 -EAGAIN);
	end_element(c, "sweep", 0, 0);
	end_element(c, "sweep", 1, 0);
	end_element(c, "sweep", 2, 0);
	assert_int_equal(a->state, SCHED_JOB_COMPLETED);
	sched_cluster_free(c);
}

/* A restart keeps the array, its elements' links and how each ended, and goes on. */
static void test_array_saved_and_restored(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o), *c2 = fx_cluster(&o);
	struct sched_job *a;
	json_t *arr;

	(void)state;
	fx_submit_spec(c, array_spec("sweep", 8, "0-5%2"), FX_UID);
	end_element(c, "sweep", 0, 1);
	fx_save_and_restore(c, c2);
	a = sched_cluster_find_job(c2, "sweep");
	assert_int_equal(a->state, SCHED_JOB_ARRAY);
	assert_int_equal(element(c2, "sweep", 1)->array_serial, a->serial);
	assert_int_equal(element(c2, "sweep", 2)->array_index, 2);
	arr = array_status(c2, a);
	assert_int_equal(count_of(arr, "failed"), 1);
	assert_int_equal(count_of(arr, "waiting"), 3);
	json_decref(arr);
	sched_array_tick(c2, fx_now());
	assert_null(element(c2, "sweep", 3)); /* the throttle holds across the restart */
	end_element(c2, "sweep", 1, 0);
	assert_int_equal(element(c2, "sweep", 3)->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
	sched_cluster_free(c2);
}

/* An array whose elements no longer fit the inventory restores all the same: the record
 * the restore cannot run again still says it is an array's (array_record, which the pass
 * reads instead of the spec, and sched_check_invariants() compares). */
static void test_array_restored_into_a_smaller_inventory(void **state)
{
	struct fx_opts two = { .servers = 2 }, one = { .servers = 1 };
	struct sched_cluster *c = fx_cluster(&two), *c2 = fx_cluster(&one);
	struct sched_job *a;

	(void)state;
	a = fx_submit_spec(c, array_spec("wide", 16, "0-1%1"), FX_UID);
	assert_true(a->array_record);
	fx_save_and_restore(c, c2);
	a = sched_cluster_find_job(c2, "wide");
	assert_non_null(a);
	assert_true(sched_job_is_array(a));
	assert_true(a->array_record);
	fx_check(c2);
	sched_cluster_free(c);
	sched_cluster_free(c2);
}

/* An array's after: is waited for by the array as a whole, on the records named at its
 * submission: no element is made before, a record dropped later changes nothing, and a
 * dependency that can never be met cancels the array once, making no element. */
static void test_array_waits_for_its_dependencies(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s = array_spec("sweep", 8, "0-3%1"), *s2;
	struct sched_job *a;

	(void)state;
	fx_run(c, "prep", 8);
	waits_for(s, "prep", false);
	a = fx_submit_spec(c, s, FX_UID);
	assert_int_equal(a->state, SCHED_JOB_PENDING);
	assert_non_null(strstr(a->reason, "waiting for job prep"));
	assert_null(element(c, "sweep", 0));
	assert_int_equal(fx_complete(c, "prep", FX_UID, fx_now()), 0);
	assert_int_equal(a->state, SCHED_JOB_ARRAY);
	sched_array_tick(c, fx_now());
	assert_int_equal(element(c, "sweep", 0)->state, SCHED_JOB_RUNNING);
	assert_int_equal(element(c, "sweep", 0)->spec->after_count, 0);
	/* prep's record goes: the elements made later do not look for it */
	assert_int_equal(fx_remove(c, "prep", FX_UID, fx_now()), 0);
	end_element(c, "sweep", 0, 0);
	assert_int_equal(element(c, "sweep", 1)->state, SCHED_JOB_RUNNING);

	fx_submit(c, "gate", 8);
	s2 = array_spec("grid", 8, "0-999%2");
	waits_for(s2, "gate", false);
	fx_submit_spec(c, s2, FX_UID);
	assert_int_equal(fx_cancel(c, "gate", FX_UID, fx_now()), 0);
	sched_array_tick(c, fx_now());
	assert_int_equal(sched_cluster_find_job(c, "grid")->state, SCHED_JOB_CANCELLED);
	assert_null(element(c, "grid", 0)); /* not one element made */
	fx_check(c);
	sched_cluster_free(c);
}

/* Where agents run the elements, a cancelled array stays active until they have stopped:
 * a job waiting for it to end (afterany) waits until then. */
static void test_array_cancel_waits_for_elements_to_stop(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *after = fx_spec("next", 8);
	struct sched_job *a;

	(void)state;
	for (unsigned i = 0; i < 4; i++)
		fx_report_ok(c, i, fx_now());
	a = fx_submit_spec(c, array_spec("sweep", 8, "0-5%2"), FX_UID);
	waits_for(after, "sweep", true);
	fx_submit_spec(c, after, FX_UID);
	assert_int_equal(sched_job_cancel(c, "sweep", FX_UID, fx_now()), 0);
	assert_int_equal(element(c, "sweep", 0)->state, SCHED_JOB_STOPPING);
	assert_int_equal(a->state, SCHED_JOB_ARRAY);
	assert_non_null(strstr(a->reason, "waiting for 2 elements to stop"));
	assert_int_equal(sched_cluster_find_job(c, "next")->state, SCHED_JOB_PENDING);
	fx_report_gone(c, "sweep.0", fx_now());
	fx_report_gone(c, "sweep.1", fx_now());
	sched_array_tick(c, fx_now());
	assert_int_equal(a->state, SCHED_JOB_CANCELLED);
	assert_null(element(c, "sweep", 2)); /* none made meanwhile */
	assert_int_equal(sched_cluster_find_job(c, "next")->state, SCHED_JOB_RUNNING);
	fx_check(c);
	sched_cluster_free(c);
}

/* Elements keep their array's place in the queue, in index order, however late they are
 * made; an array submitted again forgets the ended records of its earlier run. */
static void test_array_queue_place_and_rerun(void **state)
{
	struct fx_opts o = { .servers = 2 };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a, *later;

	(void)state;
	a = fx_submit_spec(c, array_spec("sweep", 8, "0-3%3"), FX_UID);
	later = fx_submit(c, "later", 8); /* no server left: it waits */
	assert_int_equal(later->state, SCHED_JOB_PENDING);
	assert_int_equal(element(c, "sweep", 2)->state, SCHED_JOB_PENDING);
	end_element(c, "sweep", 0, 0);
	/* element 2, made before `later` was submitted, starts first; then 3, made after */
	assert_int_equal(element(c, "sweep", 2)->state, SCHED_JOB_RUNNING);
	assert_int_equal(later->state, SCHED_JOB_PENDING);
	assert_true(element(c, "sweep", 3)->queue_seq < later->queue_seq);
	end_element(c, "sweep", 1, 0);
	assert_int_equal(element(c, "sweep", 3)->state, SCHED_JOB_RUNNING);
	assert_int_equal(later->state, SCHED_JOB_PENDING);
	end_element(c, "sweep", 2, 1);
	end_element(c, "sweep", 3, 0);
	assert_int_equal(a->state, SCHED_JOB_FAILED);
	assert_int_equal(fx_cancel(c, "later", FX_UID, fx_now()), 0);

	a = fx_submit_spec(c, array_spec("sweep", 8, "0-3%1"), FX_UID);
	assert_int_equal(element(c, "sweep", 0)->array_serial, a->serial);
	for (unsigned i = 1; i < 4; i++)
		assert_null(element(c, "sweep", i)); /* the earlier run's records are gone */
	fx_check(c);
	sched_cluster_free(c);
}

/* A queue's max_submit_jobs counts the elements, not the array's record: an array alone
 * in a queue of max_submit_jobs 1 runs its elements one at a time. */
static void test_array_in_a_capped_queue(void **state)
{
	struct fx_opts o = { .servers = 4, .queues = "  - name: default\n    max_submit_jobs: 1\n" };
	struct sched_cluster *c = fx_cluster(&o);
	struct sched_job *a;

	(void)state;
	a = fx_submit_spec(c, array_spec("sweep", 8, "0-2"), FX_UID);
	assert_int_equal(element(c, "sweep", 0)->state, SCHED_JOB_RUNNING);
	assert_null(element(c, "sweep", 1)); /* the queue's one job is element 0 */
	assert_non_null(strstr(a->reason, "max_submit_jobs 1"));
	end_element(c, "sweep", 0, 0);
	end_element(c, "sweep", 1, 0);
	end_element(c, "sweep", 2, 0);
	assert_int_equal(a->state, SCHED_JOB_COMPLETED);
	sched_cluster_free(c);
}

/* The names of an array pending on its after: are its own already: another user cannot
 * take one and stall it. */
static void test_array_pending_keeps_its_names(void **state)
{
	struct fx_opts o = { .servers = 4 };
	struct sched_cluster *c = fx_cluster(&o);
	struct conf_job_spec *s = array_spec("sweep", 8, "0-3%2");
	char why[SCHED_REASON_MAX] = "";

	(void)state;
	fx_run(c, "prep", 8);
	waits_for(s, "prep", false);
	fx_submit_spec(c, s, FX_UID);
	assert_int_equal(sched_job_submit(c, fx_spec("sweep.0", 8), FX_UID + 1, FX_GID, fx_now(),
					  why, NULL),
			 -EEXIST);
	assert_non_null(strstr(why, "element of array sweep"));
	assert_int_equal(fx_complete(c, "prep", FX_UID, fx_now()), 0);
	sched_array_tick(c, fx_now());
	assert_int_equal(element(c, "sweep", 0)->state, SCHED_JOB_RUNNING);
	assert_int_equal(element(c, "sweep", 1)->state, SCHED_JOB_RUNNING);
	sched_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_array_throttle_makes_elements_in_turn),
		cmocka_unit_test(test_array_failed_element_fails_array_at_end),
		cmocka_unit_test(test_array_cancel),
		cmocka_unit_test(test_array_names),
		cmocka_unit_test(test_array_waits_for_a_record),
		cmocka_unit_test(test_array_at_owner_limit_goes_on),
		cmocka_unit_test(test_array_saved_and_restored),
		cmocka_unit_test(test_array_restored_into_a_smaller_inventory),
		cmocka_unit_test(test_array_waits_for_its_dependencies),
		cmocka_unit_test(test_array_cancel_waits_for_elements_to_stop),
		cmocka_unit_test(test_array_queue_place_and_rerun),
		cmocka_unit_test(test_array_in_a_capped_queue),
		cmocka_unit_test(test_array_pending_keeps_its_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
