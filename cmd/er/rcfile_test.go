package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"er/internal/synth"
)

// killing is a writer that kills the process writing to it once it holds more than 1 MB (a
// field, not an embedded bytes.Buffer, whose ReadFrom io.Copy would call instead of Write).
type killing struct {
	buf    bytes.Buffer
	cmd    *exec.Cmd
	killed bool
}

func (k *killing) Write(p []byte) (int, error) {
	if k.buf.Len()+len(p) > 1<<20 {
		k.buf.Write(p[:max(0, 1<<20-k.buf.Len())])
		if !k.killed {
			k.killed = true
			k.cmd.Process.Kill()
		}
		return len(p), nil
	}
	return k.buf.Write(p)
}

// erIn runs the er binary with args in directory dir, with HOME an empty directory (no ~/.er.rc),
// and returns what it wrote. While it runs, it opens dir's .er.rc for writing whenever it can, if it
// is a FIFO: that succeeds only once er has it open to read it (where er waited for ever for a
// writer), and the test fails; closing it again lets er go on. An er that writes more than 1 MB on
// stderr (reading an endless file) is killed, and the test fails.
func erIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(erBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out bytes.Buffer
	errb := &killing{cmd: cmd}
	cmd.Stdout, cmd.Stderr = &out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	rc := filepath.Join(dir, ".er.rc")
	fi, _ := os.Lstat(rc)
	fifo := fi != nil && fi.Mode()&os.ModeNamedPipe != 0
	opened := false
	for {
		select {
		case <-done:
			if errb.killed {
				t.Errorf("er %s wrote more than 1 MB on stderr, and went on: killed; its first lines:\n%.1000s", args[0], errb.buf.String())
			}
			return result{stdout: out.String(), stderr: errb.buf.String(), code: cmd.ProcessState.ExitCode()}
		default:
		}
		if fifo {
			if w, err := os.OpenFile(rc, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				if !opened {
					t.Errorf("er %s opened the FIFO ./.er.rc to read it: it waits there until a writer comes", args[0])
				}
				opened = true
				w.Close()
			}
		}
		runtime.Gosched()
	}
}

// TestRCFileHostile: er print and er export in a directory whose .er.rc is a FIFO, a device or
// another user's file (root in a user's directory) read the experiment as if there were none, and say
// why they did not read it (a FIFO hung both, /dev/urandom ran for ever, another user's file changed
// what root saw); one of the user's own is read and said.
func TestRCFileHostile(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	exp := filepath.Join(t.TempDir(), "synth.er")
	if err := synth.Write(exp, synth.Spec{Samples: 500, Functions: 40, Threads: 1, Stacks: 50, Seed: 3, Duration: 1e9}); err != nil {
		t.Fatal(err)
	}
	const hostile = "limit 1\n"
	for _, tc := range []struct {
		name, want string
		make       func(t *testing.T, rc string)
	}{
		{"fifo", "not a regular file but a named pipe (FIFO); not read", func(t *testing.T, rc string) {
			if err := syscall.Mkfifo(rc, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"urandom", "not a regular file but a character device; not read", func(t *testing.T, rc string) {
			if err := os.Symlink("/dev/urandom", rc); err != nil {
				t.Fatal(err)
			}
		}},
		{"other user's", "owned by nobody (uid 65534), not by root, who runs er print; not read", func(t *testing.T, rc string) {
			if os.Geteuid() != 0 {
				t.Skip("not root: no directory and rc file of another user can be made")
			}
			if err := os.WriteFile(rc, []byte(hostile), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{rc, filepath.Dir(rc)} {
				if err := os.Chown(p, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.make(t, filepath.Join(dir, ".er.rc"))
			p := erIn(t, dir, "print", "-functions", exp)
			if want := "er print: warning: " + filepath.Join(dir, ".er.rc") + ": " + tc.want; p.code != 0 || !strings.Contains(p.stderr, want) {
				t.Errorf("er print: exit %d, stderr:\n%.3000s\nwant %q", p.code, p.stderr, want)
			}
			if rows := strings.Count(p.stdout, "\n"); rows < 10 || strings.Contains(p.stderr, "er print: read ") {
				t.Errorf("er print read the rc file: %d lines of output:\n%s", rows, p.stdout)
			}
			x := erIn(t, dir, "export", "-o", filepath.Join(t.TempDir(), "out.folded"), exp)
			if x.code != 0 || !strings.Contains(x.stderr, tc.want) {
				t.Errorf("er export: exit %d, stderr:\n%.3000s", x.code, x.stderr)
			}
		})
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".er.rc"), []byte(hostile), 0o644); err != nil {
		t.Fatal(err)
	}
	p := erIn(t, dir, "print", "-functions", exp)
	if want := "er print: read " + filepath.Join(dir, ".er.rc") + ": limit 1\n"; p.code != 0 || strings.Count(p.stderr, want) != 1 || !strings.Contains(p.stdout, "<Total>") ||
		strings.Count(p.stdout, "\n") > 8 {
		t.Errorf("one's own ./.er.rc: exit %d, stderr:\n%s\nwant once %q; stdout:\n%s", p.code, p.stderr, want, p.stdout)
	}
}
