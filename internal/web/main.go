package web

import (
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Main runs `er analyzer` with args, the words after it: it serves the Analyzer on a loopback
// port until killed, or with --html writes a static report and returns. It returns the exit code:
// 0, 1 when the experiments cannot be read or the server fails, 2 for a usage error.
func Main(args []string, stdout, stderr io.Writer) int {
	return run(args, stdout, stderr, nil)
}

// run is Main, serving until stop is closed (nil: until killed); it returns 0 then.
func run(args []string, stdout, stderr io.Writer, stop <-chan struct{}) int {
	fl := flag.NewFlagSet("er analyzer", flag.ContinueOnError)
	fl.SetOutput(stderr)
	bind := fl.String("bind", "127.0.0.1", "address to listen on; anything but a loopback address lets other machines read your experiments")
	port := fl.Int("port", 0, "port to listen on; 0 for a free one")
	noBrowser := fl.Bool("no-browser", false, "do not open a web browser")
	html := fl.String("html", "", "write a static HTML report of the views into `dir` (new or empty) and exit, instead of serving")
	force := fl.Bool("force", false, "with --html, write into a directory that is not empty, over its files")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: er analyzer [--bind addr] [--port n] [--no-browser] [--html dir [--force]] experiment...")
		fmt.Fprintln(stderr, "Serves the experiments as a web page at the URL it prints, whose token every request must carry:")
		fmt.Fprintln(stderr, "other users of the machine cannot read them. Each page has its own filter, metrics and sort.")
		fmt.Fprintln(stderr, "A static report (--html) is no more open than the most private file it holds.")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fl.NArg() == 0 {
		fmt.Fprintln(stderr, "er analyzer: no experiment given")
		fl.Usage()
		return 2
	}
	if *port < 0 || *port > 65535 {
		fmt.Fprintf(stderr, "er analyzer: --port %d is not a port number (0 to 65535)\n", *port)
		return 2
	}
	if *html != "" {
		if err := checkReportDir(*html, *force); err != nil {
			fmt.Fprintf(stderr, "er analyzer: %v\n", err)
			return 1
		}
	}
	s, err := Open(fl.Args())
	if err != nil {
		fmt.Fprintf(stderr, "er analyzer: %v\n", err)
		return 1
	}
	for _, w := range s.eng.Warnings() {
		fmt.Fprintf(stderr, "er analyzer: warning: %s\n", w)
	}
	if *html != "" {
		pv, err := s.WriteStatic(*html)
		if err != nil {
			fmt.Fprintf(stderr, "er analyzer: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "er analyzer: static report written: %s/index.html\n", *html)
		if pv != nil {
			who := "only you"
			if pv.File&0o040 != 0 {
				who = "you and your group"
			}
			fmt.Fprintf(stdout, "er analyzer: %s can read it (its files are mode %04o): it holds the contents of %s, mode %04o\n", who, pv.File, pv.Because, pv.Mode)
		}
		return 0
	}
	// "[::1]" is written as in a URL; JoinHostPort adds the brackets.
	host := strings.TrimSuffix(strings.TrimPrefix(*bind, "["), "]")
	addr := net.JoinHostPort(host, strconv.Itoa(*port))
	done := func() {}
	defer func() { done() }()
	err = s.Serve(addr, func(url string, exposed bool) {
		fmt.Fprintf(stdout, "er analyzer: %s\n", url)
		if exposed {
			fmt.Fprintf(stderr, "er analyzer: warning: listening on %s: other machines can read these experiments and their sources\n", *bind)
		}
		if !*noBrowser {
			done = openBrowser(url, stderr)
		}
	}, stop)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "er analyzer: %v\n", err)
	return 1
}

// openBrowser starts the desktop's browser on url when there is a display, and says what to do
// otherwise. The browser is given a file that sends it on to url, not url itself: a command line
// is visible to every user of the machine (ps, /proc/PID/cmdline), and url holds the token. The
// file is 0600 in a 0700 directory of its own; done removes it.
func openBrowser(url string, stderr io.Writer) (done func()) {
	done = func() {}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		fmt.Fprintln(stderr, "er analyzer: no display: open the URL above in a browser (over ssh: ssh -L PORT:127.0.0.1:PORT host)")
		return done
	}
	dir, err := os.MkdirTemp("", "er-analyzer-")
	if err != nil {
		fmt.Fprintf(stderr, "er analyzer: %v: open the URL above in a browser\n", err)
		return done
	}
	done = func() { os.RemoveAll(dir) }
	page := filepath.Join(dir, "open.html")
	esc := html.EscapeString(url)
	body := "<!DOCTYPE html>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"refresh\" content=\"0;url=" + esc + "\">\n" +
		"<title>er analyzer</title>\n<p><a href=\"" + esc + "\">er analyzer</a></p>\n"
	if err := os.WriteFile(page, []byte(body), 0o600); err != nil {
		fmt.Fprintf(stderr, "er analyzer: %v: open the URL above in a browser\n", err)
		return done
	}
	for _, b := range []string{"xdg-open", "sensible-browser", "x-www-browser"} {
		if path, err := exec.LookPath(b); err == nil {
			cmd := exec.Command(path, "file://"+page)
			if cmd.Start() == nil {
				go cmd.Wait()
				return done
			}
		}
	}
	fmt.Fprintln(stderr, "er analyzer: no browser found (xdg-open): open the URL above in a browser")
	return done
}
