package collect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSetIDWarning(t *testing.T) {
	user := creds{euid: 1000, egid: 1000}
	root := creds{euid: 0, egid: 0, ptrace: true}
	for _, tc := range []struct {
		name string
		f    fileIDs
		c    creds
		lib  string
		want []string // "" for no warning
	}{
		{"plain", fileIDs{uid: 0, gid: 0}, user, "heap tracing (-H)", nil},
		{"suid root by a user", fileIDs{setuid: true}, user, "",
			[]string{"prog is set-user-ID (user root, 0): under er collect it runs without that privilege, as you", "run er collect as root"}},
		{"suid root by a user, tracing", fileIDs{setuid: true}, user, "heap tracing (-H)",
			[]string{"runs without that privilege", "ignores LD_PRELOAD", "heap tracing (-H) records nothing"}},
		{"suid of oneself", fileIDs{setuid: true, uid: 1000, gid: 1000}, user, "heap tracing (-H)", nil},
		{"suid root by root, clock only", fileIDs{setuid: true}, root, "", nil},
		{"suid other by root, clock only", fileIDs{setuid: true, uid: 4242421}, root, "", nil},
		{"suid other by root, tracing", fileIDs{setuid: true, uid: 4242421}, root, "I/O tracing (-i)",
			[]string{"prog is set-user-ID (user 4242421)", "it runs with that privilege, but the dynamic loader ignores LD_PRELOAD", "I/O tracing (-i) records nothing"}},
		{"sgid", fileIDs{setgid: true, uid: 1000}, user, "",
			[]string{"prog is set-group-ID (group root, 0): under er collect it runs without that privilege"}},
		{"suid and sgid", fileIDs{setuid: true, setgid: true}, user, "",
			[]string{"prog is set-user-ID (user root, 0) and set-group-ID (group root, 0)"}},
		{"capabilities", fileIDs{caps: true, uid: 1000, gid: 1000}, user, "",
			[]string{"prog is given file capabilities: under er collect it runs without that privilege"}},
		{"capabilities by root", fileIDs{caps: true}, root, "heap tracing (-H)", nil},
		{"nosuid mount", fileIDs{setuid: true, nosuid: true}, user, "heap tracing (-H)", nil},
		{"no_new_privs", fileIDs{setuid: true, uid: 4242421}, creds{ptrace: true, nnp: true}, "heap tracing (-H)", nil},
		{"no_new_privs, capabilities", fileIDs{caps: true, uid: 1000, gid: 1000}, creds{euid: 1000, egid: 1000, nnp: true}, "", nil},
		// At the gate: the tracer of er's that follows its children decides, or nothing does.
		{"gated, untraced", fileIDs{setuid: true, uid: 4242421}, creds{gated: true}, "",
			[]string{"it runs with that privilege (it is not traced)", "the kernel removes the perf events", "nothing of it is recorded"}},
		{"gated, by a privileged tracer, as a user", fileIDs{setuid: true}, creds{euid: 1000, egid: 1000, gated: true, ptrace: true, tracer: "process 40 (strace)"}, "heap tracing (-H)",
			[]string{"it runs with that privilege (its tracer, process 40 (strace), has CAP_SYS_PTRACE)", "nothing of it is recorded", "heap tracing (-H) records nothing"}},
		{"gated, by an unprivileged tracer", fileIDs{setuid: true}, creds{euid: 1000, egid: 1000, gated: true, tracer: "process 40 (strace)"}, "",
			[]string{"runs without that privilege, as you (it is traced by process 40 (strace), which traces er and follows its children"}},
	} {
		got := setIDWarning("/x/prog", tc.f, tc.c, tc.lib)
		if len(tc.want) == 0 {
			if got != "" {
				t.Errorf("%s: %q, want no warning", tc.name, got)
			}
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q\nwant %q in it", tc.name, got, w)
			}
		}
	}
}

func TestStatIDs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(p, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o755|os.ModeSetuid|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	f, err := statIDs(p)
	if err != nil {
		t.Fatal(err)
	}
	if !f.setuid || !f.setgid || f.caps || f.uid != uint32(os.Getuid()) {
		t.Errorf("%+v: want set-user-ID and set-group-ID, owned by %d, no capabilities", f, os.Getuid())
	}
	// Set-group-ID without group execute is mandatory locking, not set-group-ID.
	if err := os.Chmod(p, 0o745|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if f, _ := statIDs(p); f.setuid || f.setgid {
		t.Errorf("%+v: want neither", f)
	}
	if _, err := statIDs(p + ".missing"); err == nil {
		t.Error("a missing file: no error")
	}
}
