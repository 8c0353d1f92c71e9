package memdriver

// Plant names one fault planted on purpose so that a driver breaks exactly
// one rule (SPEC §7). It exists only for package broken, whose drivers are
// this MemoryDriver with one plant each, to prove that the contract monitor
// and the conformance suite catch every rule they claim to check. The zero
// value plants nothing; no other package may set it.
//
// This package defines no plant names and implements none: a plant is a
// small `if d.plant == "Name"` added by package broken's author at one of the
// spots below, each of which is a single function so one test covers it.
//
//	spot (function)          plants that belong there
//	validate                 AcceptsRepeatedKey, MaxRowsOffByOne
//	startRow                 TouchesOnMiss
//	moveChunk                OutsideSlot
//	finishTransfer           OverwritesOnPublish, TornPublish, ShortReadOK
//	completeRow              MissAsFault, FaultAsMiss, RegressingResult
//	setAccess / maybeEnd     LiesAboutAccess, ForgetsUnprovable
//	callHandle.Results       ShortAnswer, ReorderedAnswer
//	callHandle.Cancel        CancelClaimsEnded, BlockingCancel
//	Contains                 LookupOutageAsAbsent
//	Register / checkOverlap  AcceptsOverlap, LeakyRegisterFailure, RegistersAfterShutdown
//	Unregister / closeOne    CloseByAddress, UnregisterLies, UnregistersBusy
//	changed / runNotify      LostWakeup, EarlySignal, SignalUnderLock, SignalAfterShutdown
//	Drain                    DrainLies
//	Shutdown                 SilentShutdown
type Plant string
