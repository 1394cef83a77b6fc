package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"er/internal/experiment"
)

// TestConcurrentCollect starts 12 er collect into one directory at once (-d, and -g with a group
// file): each must take a name of its own (the mkdir is the claim), and every target must run.
func TestConcurrentCollect(t *testing.T) {
	needCollect(t)
	const n = 12
	for _, tc := range []struct {
		name  string
		flags []string
		stem  string
	}{
		{"d", nil, "test"},
		{"g", []string{"-g", "grp.erg"}, "grp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			results := make([]result, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					args := append([]string{"collect", "-d", dir, "-a", "off"}, tc.flags...)
					args = append(args, "/bin/sh", "-c", fmt.Sprintf("echo ran > %s/ran.%d", dir, i))
					cmd := exec.Command(erBin, args...)
					var out strings.Builder
					cmd.Stdout, cmd.Stderr = &out, &out
					<-start
					err := cmd.Run()
					code := 0
					if ee, ok := err.(*exec.ExitError); ok {
						code = ee.ExitCode()
					} else if err != nil {
						code = -1
					}
					results[i] = result{stderr: out.String(), code: code}
				}()
			}
			close(start)
			wg.Wait()
			for i, r := range results {
				if r.code != 0 {
					t.Errorf("er collect %d: exit %d\n%s", i, r.code, r.stderr)
				}
				if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ran.%d", i))); err != nil {
					t.Errorf("target %d did not run: %v", i, err)
				}
			}
			// 12 experiments, named stem.1.er to stem.12.er, each recording a different target.
			var names []string
			cmds := map[string]string{}
			for i := 1; i <= n; i++ {
				exp := filepath.Join(dir, fmt.Sprintf("%s.%d.er", tc.stem, i))
				d, err := experiment.Open(exp)
				if err != nil {
					t.Errorf("%v", err)
					continue
				}
				c := strings.Join(d.Log.Command, " ")
				if prev, ok := cmds[c]; ok {
					t.Errorf("%s and %s both recorded %q", prev, exp, c)
				}
				cmds[c] = exp
				names = append(names, filepath.Base(exp))
			}
			if len(cmds) != n {
				t.Errorf("%d distinct experiments, want %d: %v", len(cmds), n, names)
			}
			ents, _ := os.ReadDir(dir)
			var ers []string
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".er") {
					ers = append(ers, e.Name())
				}
			}
			sort.Strings(ers)
			if len(ers) != n {
				t.Errorf("experiments in %s: %v, want %d", dir, ers, n)
			}
			if tc.stem == "grp" {
				data, err := os.ReadFile(filepath.Join(dir, "grp.erg"))
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				if len(lines) != n+1 {
					t.Errorf("group file has %d lines, want a header and %d experiments:\n%s", len(lines), n, data)
				}
			}
		})
	}
}
