from dmlconform.cli import main

main()
