package preload

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ompToolsHeaders are where Debian's LLVM runtimes install omp-tools.h.
var ompToolsHeaders = []string{"/usr/lib/llvm-*/lib/clang/*/include/omp-tools.h", "/usr/lib/gcc/x86_64-linux-gnu/*/include/omp-tools.h",
	"/usr/include/omp-tools.h"}

// TestOMPTABI: every value that c/ompt.h declares of the OpenMP tools interface is the one the
// runtime's omp-tools.h has, and the callbacks' and structures' layouts agree (a compiler checks
// each, with both headers).
func TestOMPTABI(t *testing.T) {
	var header string
	for _, g := range ompToolsHeaders {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			header = m[len(m)-1]
			break
		}
	}
	if header == "" {
		t.Skip("no omp-tools.h on this machine (.ci/run installs libomp-dev)")
	}
	pairs := [][2]string{
		{"ER_OMPT_CALLBACK_PARALLEL_BEGIN", "ompt_callback_parallel_begin"},
		{"ER_OMPT_CALLBACK_PARALLEL_END", "ompt_callback_parallel_end"},
		{"ER_OMPT_CALLBACK_IMPLICIT_TASK", "ompt_callback_implicit_task"},
		{"ER_OMPT_CALLBACK_TASK_CREATE", "ompt_callback_task_create"},
		{"ER_OMPT_CALLBACK_TASK_SCHEDULE", "ompt_callback_task_schedule"},
		{"ER_OMPT_CALLBACK_SYNC_REGION_WAIT", "ompt_callback_sync_region_wait"},
		{"ER_OMPT_CALLBACK_MUTEX_ACQUIRE", "ompt_callback_mutex_acquire"},
		{"ER_OMPT_CALLBACK_MUTEX_ACQUIRED", "ompt_callback_mutex_acquired"},
		{"ER_OMPT_SET_ERROR", "ompt_set_error"}, {"ER_OMPT_SET_NEVER", "ompt_set_never"},
		{"ER_OMPT_SCOPE_BEGIN", "ompt_scope_begin"}, {"ER_OMPT_SCOPE_END", "ompt_scope_end"}, {"ER_OMPT_SCOPE_BEGINEND", "ompt_scope_beginend"},
		{"ER_OMPT_SYNC_BARRIER", "ompt_sync_region_barrier"},
		{"ER_OMPT_SYNC_BARRIER_IMPLICIT", "ompt_sync_region_barrier_implicit"},
		{"ER_OMPT_SYNC_BARRIER_EXPLICIT", "ompt_sync_region_barrier_explicit"},
		{"ER_OMPT_SYNC_BARRIER_IMPLEMENTATION", "ompt_sync_region_barrier_implementation"},
		{"ER_OMPT_SYNC_TASKWAIT", "ompt_sync_region_taskwait"},
		{"ER_OMPT_SYNC_TASKGROUP", "ompt_sync_region_taskgroup"},
		{"ER_OMPT_SYNC_REDUCTION", "ompt_sync_region_reduction"},
		{"ER_OMPT_SYNC_BARRIER_IMPLICIT_WORKSHARE", "ompt_sync_region_barrier_implicit_workshare"},
		{"ER_OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL", "ompt_sync_region_barrier_implicit_parallel"},
		{"ER_OMPT_SYNC_BARRIER_TEAMS", "ompt_sync_region_barrier_teams"},
		{"ER_OMPT_MUTEX_LOCK", "ompt_mutex_lock"}, {"ER_OMPT_MUTEX_TEST_LOCK", "ompt_mutex_test_lock"},
		{"ER_OMPT_MUTEX_NEST_LOCK", "ompt_mutex_nest_lock"}, {"ER_OMPT_MUTEX_TEST_NEST_LOCK", "ompt_mutex_test_nest_lock"},
		{"ER_OMPT_MUTEX_CRITICAL", "ompt_mutex_critical"}, {"ER_OMPT_MUTEX_ATOMIC", "ompt_mutex_atomic"},
		{"ER_OMPT_MUTEX_ORDERED", "ompt_mutex_ordered"},
		{"ER_OMPT_TASK_INITIAL", "ompt_task_initial"}, {"ER_OMPT_TASK_IMPLICIT", "ompt_task_implicit"},
		{"ER_OMPT_TASK_EXPLICIT", "ompt_task_explicit"},
	}
	var b strings.Builder
	b.WriteString("#include <stddef.h>\n#include \"ompt.h\"\n#include \"" + header + "\"\n")
	for _, p := range pairs {
		b.WriteString("_Static_assert(" + p[0] + " == " + p[1] + ", \"" + p[0] + "\");\n")
	}
	// The layouts: the union, the start result, and the callbacks as omp.c defines them.
	b.WriteString(`_Static_assert(sizeof(er_ompt_data_t) == sizeof(ompt_data_t), "ompt_data_t");
_Static_assert(sizeof(struct er_ompt_start_tool_result) == sizeof(ompt_start_tool_result_t), "start result");
_Static_assert(offsetof(struct er_ompt_start_tool_result, finalize) == offsetof(ompt_start_tool_result_t, finalize), "finalize");
_Static_assert(offsetof(struct er_ompt_start_tool_result, tool_data) == offsetof(ompt_start_tool_result_t, tool_data), "tool_data");
static void pb(er_ompt_data_t *a, const void *b, er_ompt_data_t *c, unsigned d, int e, const void *f) {}
static void pe(er_ompt_data_t *a, er_ompt_data_t *b, int c, const void *d) {}
static void it(int a, er_ompt_data_t *b, er_ompt_data_t *c, unsigned d, unsigned e, int f) {}
static void sw(int a, int b, er_ompt_data_t *c, er_ompt_data_t *d, const void *e) {}
static void ma(int a, unsigned b, unsigned c, unsigned long d, const void *e) {}
static void md(int a, unsigned long b, const void *c) {}
static void tc(er_ompt_data_t *a, const void *b, er_ompt_data_t *c, int d, int e, const void *f) {}
static void ts(er_ompt_data_t *a, int b, er_ompt_data_t *c) {}
ompt_callback_parallel_begin_t cpb = (ompt_callback_parallel_begin_t)pb;
ompt_callback_parallel_end_t cpe = (ompt_callback_parallel_end_t)pe;
ompt_callback_implicit_task_t cit = (ompt_callback_implicit_task_t)it;
ompt_callback_sync_region_t csw = (ompt_callback_sync_region_t)sw;
ompt_callback_mutex_acquire_t cma = (ompt_callback_mutex_acquire_t)ma;
ompt_callback_mutex_t cmd = (ompt_callback_mutex_t)md;
ompt_callback_task_create_t ctc = (ompt_callback_task_create_t)tc;
ompt_callback_task_schedule_t cts = (ompt_callback_task_schedule_t)ts;
_Static_assert(sizeof(ompt_wait_id_t) == sizeof(unsigned long), "wait id");
_Static_assert(sizeof(ompt_task_status_t) == sizeof(int), "task status");
_Static_assert(sizeof(ompt_sync_region_t) == sizeof(int) && sizeof(ompt_scope_endpoint_t) == sizeof(int) && sizeof(ompt_mutex_t) == sizeof(int), "enums");
`)
	dir := t.TempDir()
	src := filepath.Join(dir, "abi.c")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("gcc", "-std=gnu11", "-Wall", "-Wno-unused-function", "-Wno-unused-parameter", "-Ic", "-c", "-o", filepath.Join(dir, "abi.o"), src).CombinedOutput()
	if err != nil {
		t.Fatalf("c/ompt.h and %s disagree: %v\n%s", header, err, out)
	}
}
