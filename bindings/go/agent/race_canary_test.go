package agent_test

import (
	"os"
	"testing"
)

// A deliberate data race, the positive control of `go test -race` (make go-test runs it with
// LIBAGENT_GO_RACE_CANARY=1 and requires "WARNING: DATA RACE" and a failure): if the detector
// stopped working, every race-enabled test of the binding would pass for nothing. Skipped
// otherwise.
func TestRaceCanary(t *testing.T) {
	if os.Getenv("LIBAGENT_GO_RACE_CANARY") == "" {
		t.Skip("the race canary runs only with LIBAGENT_GO_RACE_CANARY=1 (make go-test)")
	}
	shared := 0
	done := make(chan struct{})
	go func() {
		shared++ // unsynchronized on purpose
		close(done)
	}()
	shared++ // races with the goroutine's write: nothing orders the two
	<-done
	t.Logf("shared = %d", shared)
}
