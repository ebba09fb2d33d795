package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The guard on Windows. The daemon starts `toolsd __guard -grace=D -- name args...` and
// stops it by killing it (Windows has no SIGTERM to pass on). The guard puts the command in
// a Job Object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE before it runs a single instruction
// (started suspended, assigned, resumed): every process the command starts is in the job
// too, whatever it detaches from. The job's one handle is the guard's, so the whole tree
// dies when the command ends (the guard terminates the job), when the daemon kills the
// guard (cancel, time-out: the handle closes with the guard), and when the daemon dies (the
// guard waits on the daemon's process and then terminates the job). There is no grace:
// the tree is killed at once.

// sigKillNow is not used on Windows (KillGroup kills the guard).
const sigKillNow = syscall.Signal(-1)

var procNtResumeProcess = windows.NewLazySystemDLL("ntdll.dll").NewProc("NtResumeProcess")

// RunGuard is the guard's main on Windows: args are the guard's options and the command to
// run; it returns the command's exit code. A policy is refused: Windows has no sandbox yet.
func RunGuard(args []string) int {
	o, argv, err := parseGuardArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "toolsd: %s: %v\n", GuardArg, err)
		return 2
	}
	if len(argv) == 0 {
		return 127
	}
	if o.policy != nil {
		fmt.Fprintln(os.Stderr, "toolsd: no sandbox on Windows yet: a command that was to run confined does not run")
		return 126
	}
	job, err := killOnCloseJob()
	if err != nil {
		fmt.Fprintf(os.Stderr, "toolsd: the command's Job Object: %v\n", err)
		return 126
	}
	// The handle stays open until the guard exits; closing it (or the guard's death) kills
	// the tree.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "toolsd: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	if err := adopt(job, cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		fmt.Fprintf(os.Stderr, "toolsd: putting the command in its Job Object: %v\n", err)
		return 126
	}
	go func() {
		waitForParent()
		_ = windows.TerminateJobObject(job, 1)
		os.Exit(128 + 9)
	}()
	err = cmd.Wait()
	_ = windows.TerminateJobObject(job, 1) // nothing the command left may outlive it
	return ExitCode(err)
}

// killOnCloseJob makes a Job Object whose processes are killed when its last handle closes.
func killOnCloseJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

// adopt puts the suspended process pid in job and resumes it.
func adopt(job windows.Handle, pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.PROCESS_SUSPEND_RESUME, false, uint32(pid))
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		return err
	}
	if r, _, _ := procNtResumeProcess.Call(uintptr(h)); r != 0 {
		return fmt.Errorf("NtResumeProcess: status %#x", r)
	}
	return nil
}

// waitForParent returns when the guard's parent (the daemon) has exited, or at once when it
// cannot be watched.
func waitForParent() {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(os.Getppid()))
	if err != nil {
		return
	}
	defer windows.CloseHandle(h)
	_, _ = windows.WaitForSingleObject(h, windows.INFINITE)
}
