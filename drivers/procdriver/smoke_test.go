package procdriver_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/storesim/storesim/drivers"
)

func TestSmoke(t *testing.T) {
	d := start(t, refCmd(t, "--latency-ms", "0"), nil)
	sh := shared(t)
	src := lent(sh, "src", 4, 64, true)
	dst := lent(sh, "dst", 4, 64, true)
	hs, err := d.Register(src.Region())
	if err != nil {
		t.Fatal(err)
	}
	hd, err := d.Register(dst.Region())
	if err != nil {
		t.Fatal(err)
	}
	src.Fill(0, bytes.Repeat([]byte{7}, 64))
	s := newSignal()
	pub, err := d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: "k", Handle: hs, Slot: 0}}}, s.fire)
	if err != nil {
		t.Fatal(err)
	}
	until(t, s, "publish", func() bool { return pub.Access() == drivers.AccessEnded && pub.Results()[0].Final() })
	found, err := d.Contains(context.Background(), []string{"k", "x"})
	t.Logf("contains %v %v", found, err)
	f, err := d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "k", Handle: hd, Slot: 2}, {Key: "x", Handle: hd, Slot: 3, Position: 1}}}, s.fire)
	if err != nil {
		t.Fatal(err)
	}
	until(t, s, "fetch", func() bool { return f.Access() == drivers.AccessEnded })
	t.Logf("fetch %v %v slot %v", f.Results(), f.Access(), dst.Peek(2)[:4])
	if !bytes.Equal(dst.Peek(2), bytes.Repeat([]byte{7}, 64)) {
		t.Fatalf("fetched %v", dst.Peek(2))
	}
	t.Logf("touches %v", dst.Touches())
	t.Logf("drain %+v", d.Drain())
	t.Logf("labels %v", shutdown(t, d))
}
