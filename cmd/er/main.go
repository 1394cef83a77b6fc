// Command er is a performance analyzer for Linux: er collect records experiments; er print and
// er analyzer (a web page) analyse them.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"er/internal/collect"
	"er/internal/erarchive"
	"er/internal/erprint"
	"er/internal/expfiles"
	"er/internal/perfimport"
	"er/internal/version"
	"er/internal/web"
)

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches on the name er was invoked by (a symlink such as collect, er_print or er_rm) or on the subcommand.
func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch filepath.Base(argv[0]) {
	case "collect", "er_collect":
		return collect.Main(argv[1:], stdout, stderr)
	case "er_print":
		return erprint.Main(argv[1:], stdin, stdout, stderr)
	case "er_archive", "gp-archive":
		return erarchive.Main(argv[1:], stdout, stderr)
	case "er_rm":
		return expfiles.RmMain(argv[1:], stdout, stderr)
	case "er_cp":
		return expfiles.CpMain(argv[1:], stdout, stderr)
	case "er_mv":
		return expfiles.MvMain(argv[1:], stdout, stderr)
	case "analyzer", "er_analyzer":
		return web.Main(argv[1:], stdout, stderr)
	}
	if len(argv) < 2 {
		usage(stderr)
		return 2
	}
	switch argv[1] {
	case "collect":
		return collect.Main(argv[2:], stdout, stderr)
	case "print":
		return erprint.Main(argv[2:], stdin, stdout, stderr)
	case "archive":
		return erarchive.Main(argv[2:], stdout, stderr)
	case "export":
		return erprint.ExportMain(argv[2:], stdout, stderr)
	case "import":
		return perfimport.Main(argv[2:], stdout, stderr)
	case "rm":
		return expfiles.RmMain(argv[2:], stdout, stderr)
	case "cp":
		return expfiles.CpMain(argv[2:], stdout, stderr)
	case "mv":
		return expfiles.MvMain(argv[2:], stdout, stderr)
	case "analyzer":
		return web.Main(argv[2:], stdout, stderr)
	case "version", "-V", "--version":
		fmt.Fprintln(stdout, version.String())
		return 0
	case "man":
		if len(argv) != 3 {
			fmt.Fprintln(stderr, "usage: er man DIR")
			return 2
		}
		return writeMan(argv[2], stderr)
	case "completion":
		if len(argv) != 3 {
			fmt.Fprintln(stderr, "usage: er completion bash|zsh")
			return 2
		}
		return writeCompletion(argv[2], stdout, stderr)
	case "help", "-h", "--help", "-help":
		if len(argv) > 2 && argv[2] != "help" && !strings.HasPrefix(argv[2], "-") { // er help COMMAND: the command's own help
			return run([]string{argv[0], argv[2], "--help"}, stdin, stdout, stderr)
		}
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "er: unknown command %q\n", argv[1])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: er <command> [arguments]

Commands:
  collect [options] program [args...]   run program and record an experiment (also as: collect)
  print [-command ...] experiment...    analyse experiments, as er_print (also as: er_print)
  archive experiment                    copy load objects and sources into the experiment (also as: er_archive)
  export -o FILE experiment...          write the profile for pprof, FlameGraph, speedscope or Perfetto
  import [-o experiment] [perf.data]    convert perf record's perf.data into an experiment
  rm [-f] [-q] experiment|group...      remove experiments and experiment groups (also as: er_rm)
  cp experiment new.er | exp... dir     copy experiments (also as: er_cp)
  mv experiment new.er | exp... dir     move experiments (also as: er_mv)
  analyzer [--html dir [--force]] exp...  the Analyzer: browse experiments in a web page (also as: analyzer)
  version                               print er's version
  man DIR                               write er's man pages (er.1, er-collect.1, ...) into DIR
  completion bash|zsh                   print the shell completion script

Run 'er COMMAND --help' (or 'er help COMMAND') for a command's own help.
`)
}
