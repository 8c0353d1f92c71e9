package drivertest

import "testing"

// BenchmarkCertify is the full certification of each reference driver with
// the default options (the budget: at most 60 s on a 2-core machine, aim
// ~10 s):
//
//	go test ./drivers/drivertest -run '^$' -bench Certify -benchtime 1x
func BenchmarkCertify(b *testing.B) {
	for _, name := range []string{"memory", "together"} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				if rep := Certify(Registered(name), Options{}); !rep.Certified {
					b.Fatalf("%s not certified:\n%s", name, rep.Table())
				}
			}
		})
	}
}

// BenchmarkCertifyShort is the -short certification the pairing test runs
// 31 times.
func BenchmarkCertifyShort(b *testing.B) {
	for range b.N {
		Certify(Registered("together"), Options{Short: true})
	}
}
