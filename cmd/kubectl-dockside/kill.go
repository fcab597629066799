package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
)

// exitEnded is kill's exit code when the process had ended before the signal.
const exitEnded = 4

const killUsage = `Usage: kubectl dockside kill [flags] SANDBOX PROCESS [-s SIGNAL]

Sends SIGNAL (default TERM) to the process group of PROCESS, an ID that kubectl dockside ps lists, through the
processes subresource (RBAC: create on sandboxes/processes): what the process started gets it too. SIGNAL is
HUP, INT, QUIT, KILL, USR1, USR2, TERM, CONT or STOP, with or without SIG, or its number.
Exit codes: 0 sent, 1 it failed (no such process, a refusal; the reason is printed), 2 usage (an unknown
signal among them), 4 the process had ended already.
`

func killVerb() verb {
	k := &kubeFlags{}
	sig := "TERM"
	return verb{
		usage: killUsage, minArgs: 2, maxArgs: 2,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			fs.StringVar(&sig, "signal", sig, "the signal to send")
			fs.StringVar(&sig, "s", sig, "shorthand for --signal")
		},
		run: func(ctx context.Context, args []string) error {
			c, err := k.processes(args[0])
			if err != nil {
				return err
			}
			msg, err := c.signal(ctx, args[1], sig)
			var st *statusError
			switch {
			case errors.As(err, &st) && st.code == http.StatusBadRequest:
				return &exitError{code: exitUsage, err: err}
			case errors.As(err, &st) && st.code == http.StatusConflict && strings.HasSuffix(st.msg, "has ended"):
				return &exitError{code: exitEnded, err: err}
			case err != nil:
				return err
			}
			fmt.Println(msg)
			return nil
		},
	}
}
