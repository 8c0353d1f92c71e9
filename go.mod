module github.com/storesim/storesim

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/bradfitz/gomemcache v0.0.0-20260422231931-4d751bb6e37c
	github.com/redis/rueidis v1.0.79
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)

require (
	github.com/stretchr/testify v1.12.1 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
