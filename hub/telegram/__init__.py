"""A person's Telegram bot: the Bot API client, the bots and their chats, and the poller."""
