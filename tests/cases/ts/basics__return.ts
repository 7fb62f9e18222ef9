// expect: 2
return 1 + 1;
