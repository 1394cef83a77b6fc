package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"er/internal/collect"
	"er/internal/erprint"
	"er/internal/manpage"
	"er/internal/shellcomp"
	"er/internal/version"
)

// The man pages and shell completions, made from the same help texts the commands print.

// manPages are er's man pages: er(1), and one per subcommand from its --help.
var manPages = []struct {
	name, summary string
	args          []string // the help's command line; nil: er's own usage
}{
	{"er", "a performance analyzer for Linux", nil},
	{"er-collect", "run a program and record an experiment", []string{"collect", "--help"}},
	{"er-print", "analyse experiments (er_print)", []string{"print", "-help"}},
	{"er-export", "write profiles for pprof, FlameGraph, speedscope and Chrome's trace viewers", []string{"export", "--help"}},
	{"er-import", "convert a perf.data file into an experiment", []string{"import", "--help"}},
	{"er-archive", "copy load objects and sources into an experiment", []string{"archive", "--help"}},
	{"er-analyzer", "browse experiments in a web page", []string{"analyzer", "--help"}},
	{"er-rm", "remove experiments", []string{"rm", "--help"}},
	{"er-cp", "copy experiments", []string{"cp", "--help"}},
	{"er-mv", "move experiments", []string{"mv", "--help"}},
}

// writeMan writes the man pages into dir (made if missing).
func writeMan(dir string, stderr io.Writer) int {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "er man: %v\n", err)
		return 1
	}
	var see []string
	for _, m := range manPages {
		see = append(see, m.name)
	}
	for _, m := range manPages {
		var help bytes.Buffer
		if m.args == nil {
			usage(&help)
		} else {
			run(append([]string{"er"}, m.args...), strings.NewReader(""), &help, io.Discard)
		}
		text := help.String()
		if i := strings.Index(text, "\nThis machine:"); i >= 0 { // (er collect's: what the machine that wrote the page has)
			text = text[:i+1]
		}
		var others []string
		for _, s := range see {
			if s != m.name {
				others = append(others, s)
			}
		}
		p := manpage.Page{Name: m.name, Section: 1, Summary: m.summary, Help: text, Source: version.String(), SeeAlso: others}
		if err := os.WriteFile(filepath.Join(dir, m.name+".1"), []byte(p.Roff()), 0o644); err != nil {
			fmt.Fprintf(stderr, "er man: %v\n", err)
			return 1
		}
	}
	return 0
}

// writeCompletion prints the completion script of a shell.
func writeCompletion(shell string, stdout, stderr io.Writer) int {
	w := shellcomp.Words{Subcommands: []string{"collect", "print", "export", "import", "archive", "rm", "cp", "mv", "analyzer", "version", "help", "man", "completion"},
		CollectOptions: collect.OptionNames(), PrintCommands: erprint.CommandNames()}
	switch shell {
	case "bash":
		fmt.Fprint(stdout, shellcomp.Bash(w))
	case "zsh":
		fmt.Fprint(stdout, shellcomp.Zsh(w))
	default:
		fmt.Fprintf(stderr, "er completion %q: bash or zsh\n", shell)
		return 2
	}
	return 0
}
