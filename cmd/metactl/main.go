package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one metactl command line and returns the process exit code. SIGINT and SIGTERM
// cancel whatever it is doing.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, stdout, stderr)
}

// runContext is run with the caller's context (tests stop long-running verbs through it).
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{ctx: ctx, stdout: stdout, stderr: stderr}
	defer a.closeClients()
	err := a.dispatch(args)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.Is(err, errUsageShown):
		return exitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "usage error: %s\n", ue.msg)
		if ue.verb != nil {
			fmt.Fprintf(stderr, "usage: metactl %s %s\n", ue.verb.name, ue.verb.args)
		} else {
			fmt.Fprintln(stderr, "run 'metactl help' for the list of verbs")
		}
		return exitUsage
	default:
		fmt.Fprintln(stderr, errorLine(err))
		return exitError
	}
}
