package perfimport

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"er/internal/erarchive"
	"er/internal/experiment"
	"er/internal/report"
)

const usage = `Usage: er import [-o experiment] [-a mode] [perf.data]

Converts a perf.data file, as perf record writes it, into an er experiment, so that er print and
the Analyzer show perf's samples: their functions, callers and callees, call tree, source lines and
instructions. Without a file it reads ./perf.data, as perf report does; "-" reads a pipe (perf
record -o - | er import -).

  -o experiment   the experiment to write (it must not exist); by default the next free test.N.er
                  in the current directory, as er collect names it
  -a mode         then copy load objects and sources into the experiment as er archive -a does
                  (off, ldobjects, usedldobjects, src, on, usedsrc, copy; usedsrc by default, as er collect)

What is imported:
  samples of cpu-clock and task-clock   clock-profiling data: each sample's period is its CPU time
                                         (User CPU or System CPU by the sample's mode)
  samples of any other event            counter data (profile.hwc): each stands for its period of
                                         events; er print -metrics shows them by the event's name
  call chains (perf record -g)           the stacks, kernel frames included
  --call-graph dwarf                     the user stacks unwound with the objects' DWARF CFI from the
                                         registers and the stack copy of each sample
  MMAP/MMAP2, COMM, FORK, EXIT           the mappings, and an experiment per process (subexperiments
                                         named as er collect's: _f1.er, _f1_x1.er)
  build ids                              load objects are archived from this machine where their
                                         build ids match, or from perf's build-id cache (~/.debug)
Kernel functions are named where the file was recorded on this machine under the running kernel.
Branch stacks, raw tracepoint data, weights and AUX data are not imported (a warning says so).
A stream cut short inside a record is imported up to it (a warning says where). A load object the
file names is read only where it is a regular ELF file (not a symbolic link, a FIFO, a device or a
file of /proc) that can be the one profiled, and only to compare build ids (docs/import.md).
`

// Main is er import.
func Main(args []string, stdout, stderr io.Writer) int {
	out, mode := "", erarchive.DefaultMode
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--help" || a == "-help" || a == "-h":
			fmt.Fprint(stdout, usage)
			return 0
		case a == "-o":
			if i+1 >= len(args) {
				fmt.Fprintln(stderr, "er import: -o needs an experiment name")
				return 2
			}
			out = args[i+1]
			i++
		case a == "-a":
			if i+1 >= len(args) {
				fmt.Fprintln(stderr, "er import: -a needs a mode ("+erarchive.ModeNames+")")
				return 2
			}
			mode = args[i+1]
			if err := erarchive.CheckMode(mode); err != nil {
				fmt.Fprintf(stderr, "er import: -a: %v\n", err)
				return 2
			}
			i++
		case strings.HasPrefix(a, "-") && a != "-":
			fmt.Fprintf(stderr, "er import: unknown option %q (run `er import --help`)\n", a)
			return 2
		default:
			files = append(files, a)
		}
	}
	if len(files) > 1 {
		fmt.Fprintf(stderr, "er import: one perf.data file at a time (%d given)\n", len(files))
		return 2
	}
	in := "perf.data"
	if len(files) == 1 {
		in = files[0]
	}
	if out != "" && !strings.HasSuffix(out, ".er") {
		fmt.Fprintf(stderr, "er import: -o %s: an experiment's name ends in .er\n", out)
		return 2
	}
	dir, err := experiment.NewDir("", out, "")
	if err != nil {
		fmt.Fprintf(stderr, "er import: %v\n", err)
		return 1
	}
	if in != "-" {
		if _, err := os.Stat(in); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "er import: %s does not exist (perf record writes ./perf.data; name another file)\n", in)
			return 1
		}
	}
	r, err := Import(in, dir)
	if err != nil {
		fmt.Fprintf(stderr, "er import: %s\n", report.Clean(err.Error()))
		return 1
	}
	for _, w := range r.Warnings { // quoted where they name what the file holds; Clean for what others' errors say of it
		fmt.Fprintf(stderr, "er import: warning: %s\n", report.Clean(w))
	}
	var parts []string
	if r.ClockSamples > 0 || r.CounterSamples == 0 {
		parts = append(parts, fmt.Sprintf("%d clock samples", r.ClockSamples))
	}
	if r.CounterSamples > 0 {
		parts = append(parts, fmt.Sprintf("%d counter samples", r.CounterSamples))
	}
	what := strings.Join(parts, ", ")
	procs := ""
	if r.Experiments > 1 {
		procs = fmt.Sprintf(" in %d experiments (a subexperiment per process)", r.Experiments)
	}
	fmt.Fprintf(stdout, "er import: %s -> %s: %s%s\n", in, r.Dir, what, procs)
	if mode != "off" {
		warn := func(w string) { fmt.Fprintf(stderr, "er import: archive: %s\n", report.Clean(w)) }
		_, err := erarchive.Archive(r.Dir, erarchive.Options{Mode: mode, Descendants: true, Warn: warn, OnlyArchived: true})
		if err != nil {
			fmt.Fprintf(stderr, "er import: archiving %s: %s (run er archive on it later)\n", r.Dir, report.Clean(err.Error()))
		}
	}
	return 0
}
