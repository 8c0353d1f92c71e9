package memdriver

// Plant names one fault planted on purpose so that a driver breaks exactly
// one rule (SPEC §7). It exists only for package broken, whose drivers are
// this MemoryDriver with one plant each, to prove that the contract monitor
// and the conformance suite catch every rule they claim to check. The zero
// value plants nothing; no other package may set it.
//
// The names are package broken's (one per SPEC §7 row); this package only
// compares against them: each plant is a small `if d.plant == "Name"` at one
// of the spots below, with any longer body in planted.go, and changes
// behaviour only in the situation its rule is about.
//
//	spot (function)                    plants that belong there
//	validate / newCall                 AcceptsRepeatedKey, MaxRowsOffByOne
//	startRow                           TouchesOnMiss
//	moveChunk                          OutsideSlot
//	finishTransfer                     OverwritesOnPublish, TornPublish, ShortReadOK
//	completeRow                        MissAsFault, FaultAsMiss, RegressingResult
//	setAccess / maybeEnd               LiesAboutAccess, ForgetsUnprovable, EarlySignal
//	callHandle.Results                 ShortAnswer, ReorderedAnswer
//	callHandle.Cancel                  CancelClaimsEnded, BlockingCancel
//	Contains                           LookupOutageAsAbsent
//	Register / checkOverlap / rollback AcceptsOverlap, LeakyRegisterFailure, RegistersAfterShutdown
//	Unregister / closeOne              CloseByAddress, UnregisterLies, UnregistersBusy
//	runNotify                          LostWakeup, SignalUnderLock
//	Drain                              DrainLies
//	Shutdown                           SilentShutdown, SignalAfterShutdown
type Plant string
