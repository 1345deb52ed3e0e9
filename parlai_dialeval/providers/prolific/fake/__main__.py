from parlai_dialeval.providers.prolific.fake.server import main

main()
