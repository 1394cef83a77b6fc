package shellcomp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var words = Words{Subcommands: []string{"collect", "print"}, CollectOptions: []string{"-p", "-h"}, PrintCommands: []string{"functions", "metrics"}}

// TestBash: the script is valid bash (bash -n) and completes what it should, run in bash.
func TestBash(t *testing.T) {
	script := Bash(words)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	f := filepath.Join(t.TempDir(), "er.bash")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", f).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	for _, c := range []struct{ line, want string }{
		{"er pr", "print"},
		{"er print -fun", "-functions"},
		{"er collect -", "-p -h"},
	} {
		words := strings.Fields(c.line)
		if strings.HasSuffix(c.line, " ") {
			words = append(words, "")
		}
		prog := ". " + f + "; COMP_WORDS=(" + strings.Join(words, " ") + "); COMP_CWORD=" + itoa(len(words)-1) +
			"; _er_complete; echo ${COMPREPLY[@]}"
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("%q completes to %q (%v), want %q", c.line, out, err, c.want)
		}
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// TestZsh: the script names its commands and holds the words.
func TestZsh(t *testing.T) {
	got := Zsh(words)
	for _, want := range []string{"#compdef er collect er_print", "subcommands=(collect print)", "print_commands=(-functions -metrics)"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if zsh, err := exec.LookPath("zsh"); err == nil {
		f := filepath.Join(t.TempDir(), "_er")
		if err := os.WriteFile(f, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(zsh, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("zsh -n: %v\n%s", err, out)
		}
	}
}
