package main

import (
	"fmt"
	"os"
	"testing"
)

// harnessTB lets this program reuse the test harnesses (sshtest) outside a
// test: it satisfies testing.TB by embedding it (the embedded value is nil and
// never called) and implements every method the harnesses use. Fatal and
// Skip panic with a tbStop, which the caller recovers as "skipped: reason".
type harnessTB struct {
	testing.TB
	cleanups []func()
	failed   bool
}

type tbStop struct{ msg string }

func (t *harnessTB) Helper()                   {}
func (t *harnessTB) Name() string              { return "pibench" }
func (t *harnessTB) Log(a ...any)              {}
func (t *harnessTB) Logf(string, ...any)       {}
func (t *harnessTB) Error(a ...any)            { t.failed = true }
func (t *harnessTB) Errorf(string, ...any)     { t.failed = true }
func (t *harnessTB) Fail()                     { t.failed = true }
func (t *harnessTB) Failed() bool              { return t.failed }
func (t *harnessTB) FailNow()                  { t.failed = true; panic(tbStop{"failed"}) }
func (t *harnessTB) Fatal(a ...any)            { t.failed = true; panic(tbStop{fmt.Sprint(a...)}) }
func (t *harnessTB) Fatalf(f string, a ...any) { t.failed = true; panic(tbStop{fmt.Sprintf(f, a...)}) }
func (t *harnessTB) Skip(a ...any)             { panic(tbStop{fmt.Sprint(a...)}) }
func (t *harnessTB) Skipf(f string, a ...any)  { panic(tbStop{fmt.Sprintf(f, a...)}) }
func (t *harnessTB) SkipNow()                  { panic(tbStop{"skipped"}) }
func (t *harnessTB) Skipped() bool             { return false }
func (t *harnessTB) Cleanup(f func())          { t.cleanups = append(t.cleanups, f) }
func (t *harnessTB) Setenv(k, v string)        { os.Setenv(k, v) }
func (t *harnessTB) TempDir() string {
	d, err := os.MkdirTemp("", "pibench-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// close runs the cleanups, last first.
func (t *harnessTB) close() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}

// catch turns a harness's Fatal or Skip into an error.
func catch(err *error) {
	if p := recover(); p != nil {
		s, ok := p.(tbStop)
		if !ok {
			panic(p)
		}
		*err = fmt.Errorf("%s", s.msg)
	}
}
