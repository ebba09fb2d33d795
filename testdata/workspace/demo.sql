-- Rebuild demo.db with: sqlite3 demo.db < demo.sql
DROP TABLE IF EXISTS books;
CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author TEXT NOT NULL, year INTEGER);
INSERT INTO books (title, author, year) VALUES
  ('The Go Programming Language', 'Donovan and Kernighan', 2015),
  ('Structure and Interpretation of Computer Programs', 'Abelson and Sussman', 1985),
  ('The Mythical Man-Month', 'Brooks', 1975);
