package harness

import "github.com/storesim/storesim/drivers/monitor"

// observers is Config.Observers for one endpoint, nil-safe. The conformance
// suite (drivers/drivertest) uses the hook to count race pairs on every
// endpoint's monitor.
func (c Config) observers(endpoint string) []monitor.Observer {
	if c.Observers == nil {
		return nil
	}
	return c.Observers(endpoint)
}
