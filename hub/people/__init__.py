"""The people of one hub: who they are and how they sign in (identity), the household the owner
keeps (household), and each person's own choices (preferences)."""
