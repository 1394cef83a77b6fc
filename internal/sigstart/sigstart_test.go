package sigstart

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestIgnored: the test binary, started again with SIGHUP, SIGUSR1, SIGPIPE and SIGTERM ignored (by a
// shell's trap, as nohup does SIGHUP's), reports them, and only them (built without cgo, SIGHUP alone).
func TestIgnored(t *testing.T) {
	if os.Getenv("SIGSTART_CHILD") == "1" {
		var names []string
		for _, s := range Ignored() {
			names = append(names, s.String())
		}
		os.Stdout.WriteString(strings.Join(names, ",") + "\n")
		return
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	out, err := exec.Command(sh, "-c", `trap '' HUP USR1 PIPE TERM; SIGSTART_CHILD=1 exec "$0" -test.run '^TestIgnored$'`, os.Args[0]).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := strings.Split(strings.SplitN(string(out), "\n", 2)[0], ",")
	var want []string
	for _, s := range wantIgnored {
		want = append(want, s.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ignored at start: %q, want %q", got, want)
	}
}
