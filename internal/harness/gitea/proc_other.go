//go:build !unix

package gitea

import (
	"os"
	"os/exec"
)

func ownGroup(cmd *exec.Cmd) {}

func terminate(cmd *exec.Cmd) { cmd.Process.Signal(os.Interrupt) }

func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }

func groupAlive(pgid int) bool { return false }
