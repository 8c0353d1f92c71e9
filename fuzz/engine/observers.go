package engine

import (
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/model"
)

// observers is Config.Observers for one endpoint, nil-safe. The conformance
// suite (drivers/drivertest) uses the hook to count race pairs on every
// endpoint's monitor.
func (c Config) observers(endpoint string) []monitor.Observer {
	if c.Observers == nil {
		return nil
	}
	return c.Observers(endpoint)
}

// The recorder and the backend check are monitor observers.
var (
	_ monitor.Observer = (*model.Recorder)(nil)
	_ monitor.Observer = (*backendCheck)(nil)
)
