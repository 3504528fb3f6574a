package tasktest_test

import (
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/storetest"
	"github.com/pullwright/pullwright/task/tasktest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) task.Store { return tasktest.NewStore(now) })
}
