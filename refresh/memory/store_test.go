package memory_test

import (
	"testing"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/refresh/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) refresh.Store { return memory.NewStore() })
}

func TestStoreEventNames(t *testing.T) {
	storetest.RunEventNames(t, func(*testing.T) storetest.EventsStore { return memory.NewStore() })
}
