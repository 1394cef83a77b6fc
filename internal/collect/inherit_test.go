package collect

import (
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"er/internal/sigstart"
)

// TestInheritIgnored: in a test binary started with SIGHUP, SIGCHLD and SIGUSR1 ignored,
// inheritIgnored leaves SIGHUP ignored and out of the stop signals, keeps SIGCHLD at its default
// (with a warning) and leaves the kept signal (SIGUSR1, a -l signal) to er's relay.
func TestInheritIgnored(t *testing.T) {
	if os.Getenv("INHERIT_CHILD") == "1" {
		stop, warning := inheritIgnored(syscall.SIGUSR1)
		var b strings.Builder
		for _, s := range stop {
			b.WriteString("stop " + s.String() + "\n")
		}
		for _, s := range []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGCHLD} {
			if signal.Ignored(s) {
				b.WriteString("ignored " + s.String() + "\n")
			}
		}
		if warning != "" {
			b.WriteString("warning " + warning + "\n")
		}
		os.Stdout.WriteString(b.String())
		return
	}
	sh, err := exec.LookPath("bash") // dash does not pass on an ignored SIGCHLD
	if err != nil {
		t.Skip("no bash")
	}
	out, err := exec.Command(sh, "-c", `trap '' HUP USR1 CHLD; INHERIT_CHILD=1 exec "$0" -test.run '^TestInheritIgnored$'`, os.Args[0]).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := string(out)
	for _, want := range []string{"stop interrupt\n", "stop terminated\n", "ignored hangup\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"stop hangup", "ignored user defined signal 1", "ignored child exited"} {
		if strings.Contains(got, bad) {
			t.Errorf("has %q:\n%s", bad, got)
		}
	}
	if sigstart.Exact != strings.Contains(got, "warning SIGCHLD was ignored when er started") {
		t.Errorf("SIGCHLD warning (exact record of ignored signals: %v):\n%s", sigstart.Exact, got)
	}
}
