"""The community (docs/community.md): follows, visits, trust, reputation, profiles, the feed and
the daily chat allowance that reputation loosens."""
