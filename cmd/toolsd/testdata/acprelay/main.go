// Command acprelay is the ACP agent of `toolsd acp`'s tests: it connects its stdin and
// stdout to the Unix socket named by ACPRELAY_SOCKET, where the test plays the agent's part.
package main

import (
	"io"
	"net"
	"os"
)

func main() {
	c, err := net.Dial("unix", os.Getenv("ACPRELAY_SOCKET"))
	if err != nil {
		os.Stderr.WriteString("acprelay: " + err.Error() + "\n")
		os.Exit(1)
	}
	go func() {
		_, _ = io.Copy(c, os.Stdin)
		_ = c.(*net.UnixConn).CloseWrite()
	}()
	_, _ = io.Copy(os.Stdout, c)
}
