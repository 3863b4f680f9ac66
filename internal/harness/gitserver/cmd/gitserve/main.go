// Command gitserve serves the bare repositories under a directory over git's smart HTTP
// protocol (package gitserver), for scripts such as scripts/capture-fetch-fixtures.sh.
//
//	gitserve -git /path/to/git -root DIR [-addr 127.0.0.1:PORT] [-user U -password P]
//	         [-fail-status 500 [-fail-first N] [-retry-after S]] [-hang-up N] [-stall N] [-after N]
//	         [-receive-pack] [-forge github|gitlab] [-no-keep-alive] [-v]
//
// It prints the server's base URL ("http://127.0.0.1:PORT") and a newline on stdout once
// it is listening, then serves until SIGINT or SIGTERM. Exit 2 is a usage error, 1 a
// failure to start.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/refretry/refretry/internal/harness/gitserver"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gitserve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o gitserver.Options
	gitPath := fs.String("git", "git", "git binary whose http-backend serves the repositories")
	root := fs.String("root", "", "directory holding the bare repositories (required)")
	fs.StringVar(&o.Addr, "addr", "", "loopback address to listen on (default 127.0.0.1 and a free port)")
	fs.StringVar(&o.User, "user", "", "require HTTP basic auth with this user")
	fs.StringVar(&o.Password, "password", "", "password for -user")
	fs.IntVar(&o.FailStatus, "fail-status", 0, "answer requests with this HTTP status instead of serving them")
	fs.IntVar(&o.FailFirst, "fail-first", 0, "with -fail-status: fail only the first N requests (0: every request)")
	fs.StringVar(&o.RetryAfter, "retry-after", "", "with -fail-status: send this Retry-After header")
	fs.IntVar(&o.HangUp, "hang-up", 0, "close the connection without a response on the first N requests")
	fs.IntVar(&o.After, "after", 0, "serve the first N requests normally; -hang-up, -fail-first and -stall count from the next")
	fs.IntVar(&o.Stall, "stall", 0, "send half of the answer to the first N requests, then nothing")
	fs.BoolVar(&o.ReceivePack, "receive-pack", false, "accept pushes without authentication")
	forge := fs.String("forge", "", "answer pushes as this forge's front end does: github or gitlab (default git's own answer)")
	fs.BoolVar(&o.NoKeepAlive, "no-keep-alive", false, "close every connection after one request")
	verbose := fs.Bool("v", false, "copy http-backend's stderr to stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *root == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "gitserve: -root is required and no arguments are taken")
		return 2
	}
	switch gitserver.Forge(*forge) {
	case gitserver.ForgeGit, gitserver.ForgeGitHub, gitserver.ForgeGitLab:
	default:
		fmt.Fprintf(stderr, "gitserve: -forge %q: want github or gitlab\n", *forge)
		return 2
	}
	if *verbose {
		o.Stderr = stderr
	}
	o.Forge = gitserver.Forge(*forge)
	// Catch the signals before announcing the URL, so a caller that kills us right
	// after reading it still gets an orderly Close.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	s, err := gitserver.Start(*gitPath, *root, o)
	if err != nil {
		fmt.Fprintln(stderr, "gitserve:", err)
		return 1
	}
	fmt.Fprintln(stdout, s.BaseURL())
	<-sig
	s.Close()
	return 0
}
