package main

import (
	"bufio"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"er/internal/web"
	"er/preload"
)

// javaBuild compiles testdata/java (JavaProg.java and its JNI library, JavaSync.java) into a
// directory of its own, and returns it; the test is skipped where no JDK is installed (.ci/run installs
// default-jdk-headless).
func javaBuild(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("javac is not installed (.ci/run installs default-jdk-headless)")
	}
	flags := preload.JavaFlags()
	if flags == nil {
		t.Skip("no JDK headers in /usr/lib/jvm")
	}
	dir := filepath.Join(workDir, "java")
	if _, err := os.Stat(filepath.Join(dir, "libjavaprog.so")); err == nil {
		return dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "..", "testdata", "java")
	if out, err := exec.Command("javac", "-g", "-d", dir, filepath.Join(src, "JavaProg.java"), filepath.Join(src, "JavaSync.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	args := append([]string{"-shared", "-fPIC", "-O1", "-g", "-Wall"}, flags[1:]...)
	args = append(args, "-o", filepath.Join(dir, "libjavaprog.so"), filepath.Join(src, "javaprog.c"))
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}

// javaMeasured parses what JavaProg measured of itself: method -> seconds.
func javaMeasured(t *testing.T, out string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "java" && f[2] == "cpu_ns" {
			v, err := strconv.ParseFloat(f[3], 64)
			if err != nil {
				t.Fatalf("JavaProg printed %q", sc.Text())
			}
			m[f[1]] = v / 1e9
		}
	}
	if len(m) != 6 {
		t.Fatalf("JavaProg measured %d methods, want 6:\n%s", len(m), out)
	}
	return m
}

// javaRows parses a -functions listing of one metric into name -> the sum of its rows (the machine
// mode has a row for each compiled instance of a method).
func javaRows(out string) map[string]float64 {
	rows := map[string]float64{}
	num := regexp.MustCompile(`^[0-9.]+$`)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !num.MatchString(f[0]) {
			continue
		}
		v, _ := strconv.ParseFloat(f[0], 64)
		rows[strings.Join(f[1:], " ")] += v
	}
	return rows
}

// TestJavaUserMode: a Java program's methods, interpreted, compiled and inlined, and a JNI native
// method, each hold in the user view mode the CPU time the program measured of them (ThreadMXBean)
// within 5%, with their callers; the code no mode names is under 2% of the total; in the machine
// mode a method's interpreted and compiled instances add up to its user-mode time.
func TestJavaUserMode(t *testing.T) {
	dir := javaBuild(t)
	// -p hi: a sample of 1 ms is 0.2% of the shortest part measured (0.5 s).
	// alpha's compilation is put off (its thresholds 200 times the JVM's), so that it runs
	// interpreted for some 0.1 s before it is compiled on stack replacement.
	exp, r := collectExp(t, nil, "-p", "hi", "java", "-XX:CompileCommand=quiet", "-XX:CompileCommand=CompileThresholdScaling,JavaProg::alpha,200.0",
		"-Djava.library.path="+dir, "-cp", dir, "JavaProg", "1")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	want := javaMeasured(t, r.stdout)
	p := er(t, "", nil, "print", "-metrics", "i.totalcpu", "-functions", exp)
	if p.code != 0 {
		t.Fatalf("er print: exit %d\n%s", p.code, p.stderr)
	}
	user := javaRows(p.stdout)
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.05*want {
			t.Errorf("%s: inclusive %.3f s, the program measured %.3f s (not within 5%%)", name, got, want)
		}
	}
	for _, m := range []struct{ fn, key string }{
		{"JavaProg.alpha(long)", "JavaProg.alpha"},
		{"JavaProg.beta(long)", "JavaProg.beta"},
		{"JavaProg.hot(double)", "JavaProg.hot"}, // inlined into beta by C2
		{"JavaProg.gamma(long)", "JavaProg.gamma"},
		{"JavaProg.spinNative(long)", "spin_native"}, // the JNI method
		{"spin_native", "spin_native"},               // its C code
		{"JavaProg.main(java.lang.String[])", "JavaProg.main"},
	} {
		check(m.fn, user[m.fn], want[m.key])
	}
	total := user["<Total>"]
	unnamed := 0.0
	for name, v := range user {
		if strings.HasPrefix(name, "<static>") || strings.HasPrefix(name, "<Unknown>") || name == "<no Java callstack recorded>" ||
			strings.Contains(name, "<compiled method at") || strings.HasPrefix(name, "<method ") {
			unnamed += v
		}
	}
	if unnamed > 0.02*total {
		t.Errorf("unnamed code holds %.3f s of %.3f s (more than 2%%)", unnamed, total)
	}

	// Callers: hot's is beta, the native code's the JNI method's, under gamma.
	cc := er(t, "", nil, "print", "-metrics", "i.totalcpu", "-csingle", "JavaProg.hot(double)", exp)
	if !regexp.MustCompile(`(?m)^\s*[0-9.]+\s+JavaProg\.beta\(long\)\s*$`).MatchString(cc.stdout) {
		t.Errorf("JavaProg.hot's callers do not list JavaProg.beta:\n%s", cc.stdout)
	}
	tree := er(t, "", nil, "print", "-calltree", exp)
	if !regexp.MustCompile(`JavaProg\.gamma\(long\)\n.*JavaProg\.spinNative\(long\)\n.*Java_JavaProg_spinNative\n.*spin_native\n`).MatchString(tree.stdout) {
		t.Errorf("the call tree has no gamma -> spinNative -> Java_JavaProg_spinNative -> spin_native:\n%s", tree.stdout)
	}

	// The machine mode: alpha's instances (interpreted, compiled on stack replacement) add up to
	// its user-mode time; the JVM's own frames are there.
	mp := er(t, "", nil, "print", "-viewmode", "machine", "-metrics", "i.totalcpu", "-functions", exp)
	machine := javaRows(mp.stdout)
	interp, compiled := machine["JavaProg.alpha(long) [interpreted]"], machine["JavaProg.alpha(long)"]
	if interp == 0 || compiled == 0 {
		t.Errorf("machine mode: alpha interpreted %.3f s, compiled %.3f s: want both", interp, compiled)
	}
	if got := interp + compiled; math.Abs(got-user["JavaProg.alpha(long)"]) > 0.0015 {
		t.Errorf("machine mode: alpha's instances add up to %.3f s, the user mode shows %.3f s", got, user["JavaProg.alpha(long)"])
	}
	for _, fn := range []string{"JavaCalls::call_helper(JavaValue*, methodHandle const&, JavaCallArguments*, JavaThread*)", "call_stub"} {
		if machine[fn] == 0 {
			t.Errorf("machine mode: no %s", fn)
		}
	}
	// The disassembly of beta's compiled code, from the instructions the agent recorded (the JVM
	// has exited): hot's inlined code is named, and holds samples.
	found := false
	for n := 1; n <= 4 && !found; n++ {
		d := er(t, "", nil, "print", "-viewmode", "machine", "-metrics", "e.totalcpu", "-disasm", "JavaProg.beta(long)", strconv.Itoa(n), exp)
		for _, line := range strings.Split(d.stdout, "\n") {
			f := strings.Fields(line)
			if len(f) > 2 && f[0] != "0." && strings.Contains(line, "<-- JavaProg.hot(double) JavaProg.java:") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("machine mode: no instruction of beta's compiled code with samples shows hot inlined there")
	}
	// beta's bytecode (the agent recorded it when C2 compiled beta): the call of hot, at line 50,
	// holds hot's time.
	bd := er(t, "", nil, "print", "-metrics", "i.totalcpu", "-disasm", "JavaProg.beta(long)", exp)
	if m := regexp.MustCompile(`(?m)^##\s+([0-9.]+)\s+\[\s*50\]\s+\d+:\s+invokestatic #\d+$`).FindStringSubmatch(bd.stdout); m == nil {
		t.Errorf("beta's bytecode has no hot invokestatic at line 50:\n%s%s", bd.stdout, bd.stderr)
	} else if v, _ := strconv.ParseFloat(m[1], 64); math.Abs(v-want["JavaProg.hot"]) > 0.05*want["JavaProg.hot"] {
		t.Errorf("beta's call of hot holds %.3f s, hot measured %.3f s", v, want["JavaProg.hot"])
	}
	// The expert mode: the JVM's work on a Java method's behalf (resolving calls in the
	// interpreter) is under the method.
	ep := er(t, "", nil, "print", "-viewmode", "expert", "-metrics", "i.totalcpu", "-functions", exp)
	if !strings.Contains(ep.stdout, "InterpreterRuntime::") {
		t.Errorf("expert mode: no InterpreterRuntime frames:\n%s", ep.stdout)
	}
	// JAVA_CLASSES lists the program's class with its methods, hot compiled.
	if b, err := os.ReadFile(filepath.Join(exp, "JAVA_CLASSES")); err != nil || !strings.Contains(string(b), `<class name="JavaProg" source="JavaProg.java">`) ||
		!regexp.MustCompile(`<method name="hot" signature="\(D\)D" compiled="[1-9]`).Match(b) {
		t.Errorf("JAVA_CLASSES: %v\n%.2000s", err, b)
	}
	// The threads are named: the program's by the agent, the JVM's by the names they took.
	tl := er(t, "", nil, "print", "-thread_list", exp)
	for _, name := range []string{`main`, `C2 CompilerThre`, `GC Thread#0`} {
		if !regexp.MustCompile(`(?m)\s` + regexp.QuoteMeta(name) + `$`).MatchString(tl.stdout) {
			t.Errorf("thread_list names no thread %q:\n%s", name, tl.stdout)
		}
	}
	if t.Failed() {
		t.Logf("JavaProg:\n%ser print (user):\n%s", r.stdout, p.stdout)
	}
}

// TestJavaSync: with synchronization tracing (-s all), a Java program's waits are sync events
// under the Java methods that waited, each within 5% of what the program measured of it
// (System.nanoTime): Object.wait under JavaSync.waiter and under Thread.join, and the monitor
// contention of synchronized under JavaSync.holdLock. They are the JVM's own waits (its
// pthread_cond_wait), whose stacks the library unwinds through the interpreter's frames too; with
// microstates, they are User Lock in the user mode as in the machine mode.
func TestJavaSync(t *testing.T) {
	dir := javaBuild(t)
	exp, r := collectExp(t, nil, "-s", "all", "java", "-cp", dir, "JavaSync")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	want := map[string]float64{}
	for k, v := range measured(t, r.stdout) {
		if name, ok := strings.CutSuffix(strings.TrimPrefix(k, "java "), " wait_ns"); ok {
			want[name] = v / 1e9
		}
	}
	if len(want) != 3 {
		t.Fatalf("JavaSync measured %v, want 3 waits:\n%s", want, r.stdout)
	}
	p := er(t, "", nil, "print", "-metrics", "i.sync", "-functions", exp)
	rows := javaRows(p.stdout)
	for fn, key := range map[string]string{"JavaSync.waiter()": "JavaSync.waiter", "java.lang.Thread.join()": "Thread.join",
		"JavaSync.holdLock()": "JavaSync.holdLock"} {
		if got, w := rows[fn], want[key]; math.Abs(got-w) > 0.05*w {
			t.Errorf("%s: inclusive sync wait %.3f s, the program measured %.3f s (not within 5%%)", fn, got, w)
		}
	}
	// With microstates, the waits are User Lock in the user mode too (its Java stacks have lost the
	// JVM's pthread_cond_wait frames, which tell it).
	ul := javaRows(er(t, "", nil, "print", "-metrics", "i.ulock", "-functions", exp).stdout)
	if got, w := ul["JavaSync.waiter()"], want["JavaSync.waiter"]; math.Abs(got-w) > 0.05*w {
		t.Errorf("JavaSync.waiter(): User Lock %.3f s, it waited %.3f s", got, w)
	}
	cc := er(t, "", nil, "print", "-metrics", "i.sync", "-csingle", "java.lang.Object.wait(long)", exp)
	callers, _, _ := strings.Cut(cc.stdout, "Stack Fragment")
	for _, c := range []string{"JavaSync.waiter()", "java.lang.Thread.join(long)"} {
		if !strings.Contains(callers, c) {
			t.Errorf("Object.wait's callers do not list %s:\n%s", c, cc.stdout)
		}
	}
	if t.Failed() {
		t.Logf("JavaSync:\n%ser print:\n%s", r.stdout, p.stdout)
	}
}

// TestJavaAnalyzer: the Analyzer's View box applies the Java view modes to its views: the user
// mode's function list has the Java methods and none of the JVM's frames (call_stub), its timeline
// the program's threads and none of the JVM's (GC, compilers); the machine mode's has both.
func TestJavaAnalyzer(t *testing.T) {
	dir := javaBuild(t)
	exp, r := collectExp(t, nil, "java", "-Djava.library.path="+dir, "-cp", dir, "JavaProg", "0.3")
	if r.code != 0 {
		t.Fatalf("er collect: exit %d\n%s", r.code, r.stderr)
	}
	s, err := web.Open([]string{exp})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	call := func(method, path, body string, v any) {
		t.Helper()
		req := httptest.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
		req.Header.Set("X-Er-Token", s.Token())
		req.Header.Set("X-Er-Client", "page-java")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		if v != nil {
			if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
	}
	view := func(mode string) (funcs, rows []string) {
		call("POST", "/api/viewmode", `{"mode":"`+mode+`"}`, nil)
		var fl struct {
			Rows []struct {
				Name string `json:"name"`
			} `json:"rows"`
		}
		call("GET", "/api/functions", "", &fl)
		for _, r := range fl.Rows {
			funcs = append(funcs, r.Name)
		}
		var tl struct {
			Rows []struct {
				Label string `json:"label"`
			} `json:"rows"`
		}
		call("GET", "/api/timeline?w=10", "", &tl)
		for _, r := range tl.Rows {
			rows = append(rows, r.Label)
		}
		return funcs, rows
	}
	has := func(list []string, sub string) bool {
		return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, sub) })
	}
	uf, ur := view("user")
	if !has(uf, "JavaProg.alpha(long)") || has(uf, "call_stub") || !has(ur, " main") || has(ur, "GC Thread") || has(ur, "CompilerThre") {
		t.Errorf("user mode: functions %q\ntimeline %q", uf, ur)
	}
	mf, mr := view("machine")
	if !has(mf, "call_stub") || !has(mr, "GC Thread#0") || !has(mr, " main") {
		t.Errorf("machine mode: functions %q\ntimeline %q", mf, mr)
	}
}
