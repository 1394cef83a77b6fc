package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestManPages: er man writes a page per command from its help, which man(1) renders with the
// command's options; the machine-dependent part of er collect's help is left out.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if r := er(t, "", nil, "man", dir); r.code != 0 {
		t.Fatalf("er man: exit %d\n%s", r.code, r.stderr)
	}
	for _, m := range manPages {
		b, err := os.ReadFile(filepath.Join(dir, m.name+".1"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), ".TH "+strings.ToUpper(strings.ReplaceAll(m.name, "-", `\-`))+" 1 ") {
			t.Errorf("%s.1 starts %.60q", m.name, b)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "er-collect.1"))
	if !strings.Contains(string(b), `\-h name[,interval]`) || strings.Contains(string(b), "This machine:") {
		t.Errorf("er-collect.1 lacks -h, or has this machine's details:\n%s", b)
	}
	if _, err := exec.LookPath("man"); err == nil {
		out, err := exec.Command("man", "-l", filepath.Join(dir, "er-print.1")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "data_objects") || !strings.Contains(string(out), "SYNOPSIS") {
			t.Errorf("man -l er-print.1: %v\n%.500s", err, out)
		}
	}
}

// TestCompletion: er completion bash gives a valid script that completes er print's commands; zsh
// names its commands; another shell is refused.
func TestCompletion(t *testing.T) {
	r := er(t, "", nil, "completion", "bash")
	if r.code != 0 || !strings.Contains(r.stdout, "-data_objects") || !strings.Contains(r.stdout, "complete -F _er_complete er collect er_print") {
		t.Errorf("completion bash: exit %d\n%.300s", r.code, r.stdout)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		f := filepath.Join(t.TempDir(), "er.bash")
		if err := os.WriteFile(f, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bash, "-c", ". "+f+"; COMP_WORDS=(er print -export_sp); COMP_CWORD=2; _er_complete; echo ${COMPREPLY[@]}").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "-export_speedscope" {
			t.Errorf("bash completes er print -export_sp to %q (%v)", out, err)
		}
		out, err = exec.Command(bash, "-c", ". "+f+"; COMP_WORDS=(er imp); COMP_CWORD=1; _er_complete; echo ${COMPREPLY[@]}").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "import" {
			t.Errorf("bash completes er imp to %q (%v)", out, err)
		}
	}
	if r := er(t, "", nil, "completion", "zsh"); r.code != 0 || !strings.HasPrefix(r.stdout, "#compdef er collect er_print") {
		t.Errorf("completion zsh: exit %d\n%.200s", r.code, r.stdout)
	}
	if r := er(t, "", nil, "completion", "fish"); r.code != 2 {
		t.Errorf("completion fish: exit %d", r.code)
	}
}

// TestMakeInstall: make install PREFIX=dir puts er, its classic names, the collector library, the
// collector API's header, the man pages and the completions under dir, and the installed er
// collect finds its library there (heap tracing needs it).
func TestMakeInstall(t *testing.T) {
	needCollect(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	prefix := t.TempDir()
	cmd := exec.Command("make", "-s", "-C", filepath.Join("..", ".."), "install", "PREFIX="+prefix)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for _, f := range []string{"bin/er", "bin/er_print", "bin/collect", "lib/er/libercollector.so", "include/er/collectorAPI.h", "share/man/man1/er-collect.1",
		"share/bash-completion/completions/er", "share/zsh/site-functions/_er"} {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Errorf("installed: %v", err)
		}
	}
	exp := filepath.Join(t.TempDir(), "inst.er")
	out, err := exec.Command(filepath.Join(prefix, "bin", "er"), "collect", "-H", "on", "-o", exp, "/bin/true").CombinedOutput()
	if err != nil {
		t.Fatalf("the installed er collect -H on: %v\n%s", err, out)
	}
}
