package task

import (
	"fmt"
	"strings"

	"github.com/pullwright/pullwright"
)

// maxSummarySteps is how many of the latest steps the bot's summary of
// an unfinished task lists.
const maxSummarySteps = 10

// BudgetSummary is the bot's account of a task whose agent ran out of
// budget before it called finish: the plan as the agent last left it and
// its latest steps. It claims nothing the agent did not record: a plan
// item is done only if the agent marked it so, and the summary says that
// nothing in it was checked.
func BudgetSummary(why string, plan []pullwright.PlanItem, steps []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Not finished: %s before it called finish, so it wrote no summary. "+
		"This account is the bot's, from the agent's plan and steps as it left them; it was not checked.\n\n", why)
	if len(plan) == 0 {
		b.WriteString("The agent made no plan.\n\n")
	} else {
		done := 0
		for _, p := range plan {
			if p.Status == "done" {
				done++
			}
		}
		fmt.Fprintf(&b, "**Plan** (%d of %d items marked done by the agent)\n\n", done, len(plan))
		for _, p := range plan {
			box, suffix := " ", ""
			switch p.Status {
			case pullwright.PlanDone:
				box = "x"
			case pullwright.PlanInProgress:
				suffix = " *(" + p.Words() + ")*"
			}
			fmt.Fprintf(&b, "- [%s] %s%s\n", box, oneLine(p.Title), suffix)
		}
		b.WriteString("\n")
	}
	if len(steps) > 0 {
		shown := steps[max(len(steps)-maxSummarySteps, 0):]
		if len(shown) < len(steps) {
			fmt.Fprintf(&b, "**Last steps** (%d of %d)\n\n", len(shown), len(steps))
		} else {
			b.WriteString("**Steps**\n\n")
		}
		for _, s := range shown {
			fmt.Fprintf(&b, "- %s\n", oneLine(s))
		}
		b.WriteString("\n")
	}
	b.WriteString("What is left: the plan items not marked done, and checking the change.")
	return b.String()
}

// outOfBudget ends the agent's work on a task whose budget ran out (why,
// as the task shows it) before the agent finished: the work so far is
// published as a draft pull request with the bot's summary. A task whose
// commits would go onto a pull request's branch, or whose code comes from
// a fork, gets no draft of its own (draftable): it stops, and its branch
// keeps the work.
func (t Job) outOfBudget(why string) error {
	t.OutOfBudget = why
	t.Summary = BudgetSummary(why, t.Plan, t.Steps)
	if !t.draftable() {
		t.Stop = why
		return nil
	}
	t.Title = draftTitle(t.Task)
	return t.Move(Publishing)
}

// budgetLine is the status comment's and the pull request's account of a
// task that ran out of budget.
func budgetLine(t Job) string {
	if t.OutOfBudget == "" {
		return ""
	}
	return fmt.Sprintf("**Out of budget**: %s before the work was done.", defang(t.OutOfBudget))
}
