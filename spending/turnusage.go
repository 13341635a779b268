package spending

import (
	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
)

// TurnUsage is a turn's usage as the record keeps it, from what the
// supervisor says the CLI reported: held to what one turn can spend
// (flagged, and counted nowhere, beyond it), and priced from its tokens
// when the CLI reported no cost (lazy.price, then lazy's table). The
// model is the one the CLI reported, else the one the session asked for;
// pricedBy says where the dollars came from.
func (sp *Service) TurnUsage(s *task.Snapshot, u *proto.Usage) (use task.Usage, model, pricedBy string) {
	use = task.Usage{CostUSD: u.CostUSD, InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens}
	model = u.Model
	if model == "" {
		model = s.Session.Model
	}
	if !use.CheckTurn() {
		return use, model, ""
	}
	prices, err := sp.Prices()
	if err != nil {
		// A bad lazy.price is lazy config's to report; the turn is still
		// priced from the table rather than not recorded.
		prices = budget.NewPrices(nil)
	}
	by := PriceTurn(prices, model, &use)
	use.CostUSD = task.RoundUSD(use.CostUSD)
	return use, model, by
}
