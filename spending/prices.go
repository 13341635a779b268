package spending

import (
	"fmt"

	"github.com/lazyorch/lazy/budget"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/task"
)

// KeyPrice is the setting that prices a model over lazy's table.
const KeyPrice = "lazy.price"

// Prices is lazy's price table with this repository's lazy.price
// settings over it. A bad value is an error naming the key and the fix.
func (sp *Service) Prices() (budget.Prices, error) {
	cfg, err := sp.Env.Repo.Config()
	if err != nil {
		return budget.Prices{}, fmt.Errorf("read git config: %w", err)
	}
	over := map[string]budget.Price{}
	for _, v := range cfg.All(KeyPrice) {
		model, p, err := budget.ParsePrice(v)
		if err != nil {
			return budget.Prices{}, configkeys.Invalid(KeyPrice, v, "is not a model and its prices")
		}
		over[model] = p
	}
	return budget.NewPrices(over), nil
}

// PriceTurn fills in what a turn cost when its agent CLI reported tokens
// and no dollars: from lazy.price or lazy's table, by the turn's model.
// A cost the CLI reported always wins. A turn no price reaches is
// counted unpriced (never $0). It returns where the dollars came from
// ("" when nothing priced them).
func PriceTurn(prices budget.Prices, model string, u *task.Usage) string {
	switch {
	case u.CostUSD > 0:
		return budget.PricedByAgent
	case u.Tokens() == 0:
		return ""
	}
	p, by, ok := prices.Lookup(model)
	if !ok {
		u.Unpriced = 1
		return ""
	}
	u.CostUSD = p.Cost(u.InputTokens, u.CachedInputTokens, u.OutputTokens)
	return by
}
