/* ompt.h: what the collector library uses of the OpenMP tools interface (OMPT, OpenMP 5.0
 * section 4), declared here with er_ names so that the library builds where no runtime's
 * omp-tools.h is installed; preload's TestOMPTABI checks each value against that header where it
 * is. */
#ifndef ER_OMPT_H
#define ER_OMPT_H

#include <stdint.h>

typedef union er_ompt_data {
	uint64_t value;
	void *ptr;
} er_ompt_data_t;

typedef void (*er_ompt_interface_fn_t)(void);
typedef er_ompt_interface_fn_t (*er_ompt_function_lookup_t)(const char *name);
typedef int (*er_ompt_initialize_t)(er_ompt_function_lookup_t lookup, int initial_device_num, er_ompt_data_t *tool_data);
typedef void (*er_ompt_finalize_t)(er_ompt_data_t *tool_data);

/* What ompt_start_tool returns. */
struct er_ompt_start_tool_result {
	er_ompt_initialize_t initialize;
	er_ompt_finalize_t finalize;
	er_ompt_data_t tool_data;
};

typedef void (*er_ompt_callback_t)(void);
typedef int (*er_ompt_set_callback_t)(int event, er_ompt_callback_t callback);

/* ompt_callbacks_t: the events the library registers for. */
enum {
	ER_OMPT_CALLBACK_PARALLEL_BEGIN = 3,
	ER_OMPT_CALLBACK_PARALLEL_END = 4,
	ER_OMPT_CALLBACK_TASK_CREATE = 5,
	ER_OMPT_CALLBACK_TASK_SCHEDULE = 6,
	ER_OMPT_CALLBACK_IMPLICIT_TASK = 7,
	ER_OMPT_CALLBACK_SYNC_REGION_WAIT = 16,
	ER_OMPT_CALLBACK_MUTEX_ACQUIRE = 26,
	ER_OMPT_CALLBACK_MUTEX_ACQUIRED = 27,
};

/* ompt_set_result_t: what ompt_set_callback says; never and error mean the event will not come. */
enum { ER_OMPT_SET_ERROR = 0, ER_OMPT_SET_NEVER = 1 };

/* ompt_scope_endpoint_t */
enum { ER_OMPT_SCOPE_BEGIN = 1, ER_OMPT_SCOPE_END = 2, ER_OMPT_SCOPE_BEGINEND = 3 };

/* ompt_sync_region_t */
enum {
	ER_OMPT_SYNC_BARRIER = 1, /* deprecated: an implicit barrier */
	ER_OMPT_SYNC_BARRIER_IMPLICIT = 2,
	ER_OMPT_SYNC_BARRIER_EXPLICIT = 3,
	ER_OMPT_SYNC_BARRIER_IMPLEMENTATION = 4,
	ER_OMPT_SYNC_TASKWAIT = 5,
	ER_OMPT_SYNC_TASKGROUP = 6,
	ER_OMPT_SYNC_REDUCTION = 7,
	ER_OMPT_SYNC_BARRIER_IMPLICIT_WORKSHARE = 8,
	ER_OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL = 9,
	ER_OMPT_SYNC_BARRIER_TEAMS = 10,
};

/* ompt_mutex_t */
enum {
	ER_OMPT_MUTEX_LOCK = 1,
	ER_OMPT_MUTEX_TEST_LOCK = 2,
	ER_OMPT_MUTEX_NEST_LOCK = 3,
	ER_OMPT_MUTEX_TEST_NEST_LOCK = 4,
	ER_OMPT_MUTEX_CRITICAL = 5,
	ER_OMPT_MUTEX_ATOMIC = 6,
	ER_OMPT_MUTEX_ORDERED = 7,
};

/* ompt_task_flag_t: of implicit_task's flags */
enum { ER_OMPT_TASK_INITIAL = 0x1, ER_OMPT_TASK_IMPLICIT = 0x2, ER_OMPT_TASK_EXPLICIT = 0x4 };

#endif
