package redisdriver

// Planted contract violations (Config.Plant), the Redis analogues of SPEC
// §7's broken drivers. Each changes exactly one behaviour of the driver, so
// certification can show the conformance suite catches it on its rule.
const (
	// PlantOverwritesOnPublish publishes with a plain SET (no NX): a PUBLISH
	// of a present key replaces it (breaks D-SUB-4, first writer wins).
	PlantOverwritesOnPublish = "OverwritesOnPublish"
	// PlantMissAsFault reports an absent key (nil GET) as FAULT instead of
	// MISS (breaks D-MISS-HONEST).
	PlantMissAsFault = "MissAsFault"
	// PlantWritesAfterReport reports a FETCH row OK and signals it before
	// writing its slot (breaks D-STATUS / D-CB-1: the row claims the object
	// is in the slot while it is not yet; a reader that acts on the result
	// races the write).
	PlantWritesAfterReport = "WritesAfterReport"
)

// Plants lists the planted violations Config.Plant accepts, sorted.
func Plants() []string {
	return []string{PlantMissAsFault, PlantOverwritesOnPublish, PlantWritesAfterReport}
}
