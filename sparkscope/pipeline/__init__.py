"""What happens after an application is loaded, declared in one place (:mod:`.steps`) and run
by ``fetch`` and ``analyze`` alike, with a ledger (:mod:`.ledger`) of what is still to do."""
