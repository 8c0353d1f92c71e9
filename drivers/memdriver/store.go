package memdriver

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

// ErrBadStoreOptions is wrapped by every [NewStore] refusal.
var ErrBadStoreOptions = errors.New("memdriver: bad store options")

// StoreOptions configures a [Store].
type StoreOptions struct {
	// Evicting makes the store a cache that may drop keys (the "evicting"
	// profile of the store model, S-LIN): after every put that stores an
	// object, one key (chosen from the sorted key list) is evicted with
	// probability EvictChance. Drivers' eviction faults act only on an
	// evicting store.
	Evicting bool
	// EvictChance is in [0, 1].
	EvictChance float64
	// Rand draws the store's own evictions; required when EvictChance > 0.
	Rand *sim.Rand
	// OnEvent, if set, sees every put and eviction after the store's lock is
	// released, in the order they happened (on the simulator; concurrent
	// real-time puts may reach it out of order). It must not block.
	OnEvent func(StoreEvent)
	_       struct{}
}

// StoreEventKind says what happened to a key.
type StoreEventKind uint8

const (
	// EventPut: a put ran; Stored says whether it wrote (false: the key was
	// already held and the first object was kept, D-SUB-4).
	EventPut StoreEventKind = iota + 1
	// EventEvict: an eviction ran; Stored says whether a key was removed.
	EventEvict
)

func (k StoreEventKind) String() string {
	switch k {
	case EventPut:
		return "put"
	case EventEvict:
		return "evict"
	}
	return "event?"
}

// Origin names who caused a store event: a driver's call and row. The zero
// value is a direct call of the store's methods; Driver "store" marks the
// store's own evictions.
type Origin struct {
	Driver string
	Call   drivers.CallID
	Row    int
}

// StoreEvent is one put or eviction. A history recorder uses it to learn
// whether a cancelled or failed PUBLISH took effect anyway.
type StoreEvent struct {
	Kind   StoreEventKind
	Key    string
	Stored bool
	By     Origin
}

func (e StoreEvent) String() string {
	return fmt.Sprintf("%v %q stored=%v by %s/call %d/row %d", e.Kind, e.Key, e.Stored, e.By.Driver, e.By.Call, e.By.Row)
}

// Store is the in-process byte store several drivers share (the
// MemoryStore): key → object. It is safe for concurrent use. Objects are
// copied in and out, and a put makes its object visible whole under the lock
// (D-SUB-5); a put of a held key keeps the first object (D-SUB-4).
type Store struct {
	opts StoreOptions

	mu   sync.Mutex
	objs map[string][]byte
	rnd  *sim.Rand
}

// NewStore returns an empty store. It refuses an EvictChance outside [0, 1]
// or a missing Rand when EvictChance > 0.
func NewStore(opts StoreOptions) (*Store, error) {
	switch {
	case math.IsNaN(opts.EvictChance) || opts.EvictChance < 0 || opts.EvictChance > 1:
		return nil, fmt.Errorf("%w: EvictChance %v outside [0, 1]", ErrBadStoreOptions, opts.EvictChance)
	case opts.EvictChance > 0 && !opts.Evicting:
		return nil, fmt.Errorf("%w: EvictChance %v set on a store that is not Evicting", ErrBadStoreOptions, opts.EvictChance)
	case opts.EvictChance > 0 && opts.Rand == nil:
		return nil, fmt.Errorf("%w: EvictChance %v needs a Rand", ErrBadStoreOptions, opts.EvictChance)
	}
	return &Store{opts: opts, objs: map[string][]byte{}, rnd: opts.Rand}, nil
}

// Evicting reports whether the store may drop keys (the evicting profile).
func (s *Store) Evicting() bool { return s.opts.Evicting }

// Get returns a copy of key's object.
func (s *Store) Get(key string) ([]byte, bool) {
	obj, ok := s.object(key)
	if !ok {
		return nil, false
	}
	return append([]byte(nil), obj...), true
}

// object is key's object itself, not a copy, for a driver that only reads
// it: a held object is never written (put stores a copy, or a buffer handed
// over for good).
func (s *Store) object(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objs[key]
	return obj, ok
}

// Has reports whether key is held.
func (s *Store) Has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.objs[key]
	return ok
}

// hasAll sets found[i] to whether keys[i] is held, all under one lock.
func (s *Store) hasAll(keys []string, found []bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range keys {
		_, found[i] = s.objs[k]
	}
}

// Put stores a copy of obj under key unless key is held (first writer wins,
// D-SUB-4) and reports whether it wrote.
func (s *Store) Put(key string, obj []byte) bool { return s.put(Origin{}, key, obj, false) }

// put is Put for by; with handOver the caller gives obj up (it never writes
// it again), so the store keeps obj itself rather than a copy.
func (s *Store) put(by Origin, key string, obj []byte, handOver bool) bool {
	s.mu.Lock()
	_, held := s.objs[key]
	events := []StoreEvent{{Kind: EventPut, Key: key, Stored: !held, By: by}}
	if !held {
		// D-SUB-5: the whole copy becomes visible at once, under the lock.
		if !handOver {
			obj = append([]byte(nil), obj...)
		}
		s.objs[key] = obj
		if s.opts.Evicting && s.rnd.Chance(s.opts.EvictChance) {
			keys := s.sortedKeys()
			victim := keys[s.rnd.Intn(len(keys))]
			delete(s.objs, victim)
			events = append(events, StoreEvent{Kind: EventEvict, Key: victim, Stored: true, By: Origin{Driver: "store"}})
		}
	}
	s.mu.Unlock()
	s.emit(events...)
	return !held
}

// Evict drops key and reports whether it was held.
func (s *Store) Evict(key string) bool { return s.evict(Origin{}, key) }

func (s *Store) evict(by Origin, key string) bool {
	s.mu.Lock()
	_, held := s.objs[key]
	delete(s.objs, key)
	s.mu.Unlock()
	s.emit(StoreEvent{Kind: EventEvict, Key: key, Stored: held, By: by})
	return held
}

// evictOne drops one key chosen by r from the sorted key list, if any.
func (s *Store) evictOne(by Origin, r *sim.Rand) {
	s.mu.Lock()
	if len(s.objs) == 0 {
		s.mu.Unlock()
		return
	}
	keys := s.sortedKeys()
	victim := keys[r.Intn(len(keys))]
	delete(s.objs, victim)
	s.mu.Unlock()
	s.emit(StoreEvent{Kind: EventEvict, Key: victim, Stored: true, By: by})
}

// Keys lists the held keys, sorted.
func (s *Store) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedKeys()
}

// Len is the number of held keys.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.objs)
}

func (s *Store) sortedKeys() []string {
	keys := make([]string, 0, len(s.objs))
	for k := range s.objs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (s *Store) emit(events ...StoreEvent) {
	if s.opts.OnEvent == nil {
		return
	}
	for _, e := range events {
		s.opts.OnEvent(e)
	}
}
