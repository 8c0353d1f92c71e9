package monitor

import (
	"github.com/storesim/storesim/drivers/rules"
)

// Rules lists every rule the monitor can report, in the contract's order:
// SPEC ids, plus "capabilities" (rules.DCaps) for a driver that does not
// honour its own declaration (SPEC §7, MaxRowsOffByOne).
func Rules() []rules.ID {
	return []rules.ID{
		rules.DGeom, rules.DBatchKeys, rules.DBatchValid, rules.DStatus, rules.DMissHonest, rules.DAccess,
		rules.DCaps, rules.DReg1, rules.DReg2, rules.DReg3, rules.DReg4, rules.DReg5, rules.DReg6,
		rules.DTog1, rules.DTog3, rules.DTog4, rules.DLook1, rules.DLook2, rules.DSub2, rules.DSub3,
		rules.DCB1, rules.DCB2, rules.DCB3, rules.DCB4, rules.DCB5, rules.DCan1, rules.DCan2,
		rules.DDrain1, rules.DDrain2, rules.DShut1, rules.DShut2, rules.DQuar,
	}
}

// vkey deduplicates violations: one per rule, call, row, key and region.
type vkey struct {
	rule   rules.ID
	call   uint64
	row    int
	key    string
	region string
}
