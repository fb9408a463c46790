package agent

// Test-only views of the binding's counters.

func LiveHandles() int64      { return liveHandles.Load() }
func CallbackPanics() int64   { return callbackPanics.Load() }
func CleanupsRun() int64      { return cleanupsRun.Load() }
func FinalizerMisuses() int64 { return finalizerMisuses.Load() }

// LiveRegistrations counts pinned values other than abort registrations (those are released
// whenever the library drops a finished run's signal).
func LiveRegistrations() int64 { return liveHandles.Load() - liveAborts.Load() }

// ObserveAborts calls fn in every abort notification (nil: stops).
func ObserveAborts(fn func()) {
	if fn == nil {
		abortObserved.Store(nil)
	} else {
		abortObserved.Store(&fn)
	}
}
