using System.Globalization;
using Npgsql;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>
/// What the server ran for the queue since the last <c>pg_stat_statements_reset()</c>, by kind of statement (matched
/// on the library's statement texts; the driver's own queries match none): how many calls and rows. Every library
/// statement is one round trip (single statements, prepared automatically), so calls are round trips too. The drain
/// shape's hand-written reference (<see cref="ReferenceConsumer"/>) marks its statements with comments, counted the same way.
/// Round trips are the statements and the <c>COMMIT</c>s of explicit transactions (the claim that carries outcomes writes
/// them and claims in one transaction: three round trips).
/// </summary>
internal sealed record StatementCounts(long Enqueues, long Notifies, long Claims, long ClaimedRows, long Outcomes, long Heartbeats, long Other)
{
    /// <summary>Gets how many explicit transactions were committed (a <c>COMMIT</c> is a round trip of its own; its <c>BEGIN</c> goes with the transaction's first statement).</summary>
    public long Commits { get; init; }

    /// <summary>Gets how many of the claims carried outcomes in their own statement (counted as claims, and as outcome writes that cost no statement).</summary>
    public long CarryingClaims { get; init; }

    /// <summary>Gets the round trips: every statement, and every <c>COMMIT</c> of an explicit transaction.</summary>
    public long RoundTrips => Total + Commits;

    /// <summary>Gets the server time spent planning and executing the library's statements, in milliseconds (wall-clock time of the backends, which includes waiting for a core on a busy machine).</summary>
    public (double Planning, double Execution) Time { get; init; }

    /// <summary>Gets the WAL the server wrote meanwhile (pg_stat_wal, every session's), in bytes, and how many times it was flushed to disk.</summary>
    public (long Bytes, long Syncs) Wal { get; init; }

    public long Total => Enqueues + Notifies + Claims + Outcomes + Heartbeats + Other;

    public static async Task<StatementCounts> ReadAsync(NpgsqlDataSource database, CancellationToken cancellationToken)
    {
        long enqueues = 0, notifies = 0, claims = 0, claimRows = 0, outcomes = 0, carrying = 0, commits = 0, heartbeats = 0, other = 0;
        double planning = 0, execution = 0;
        var command = database.CreateCommand("SELECT query, calls, rows, total_plan_time, total_exec_time FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'");
        await using (command)
        {
            var reader = await command.ExecuteReaderAsync(cancellationToken);
            await using (reader)
            {
                while (await reader.ReadAsync(cancellationToken))
                {
                    var (query, calls, rows) = (reader.GetString(0), reader.GetInt64(1), reader.GetInt64(2));
                    bool Has(string text) => query.Contains(text, StringComparison.Ordinal);
                    var library = Has(".items") || Has("pg_notify") || query.StartsWith("COPY", StringComparison.OrdinalIgnoreCase);
                    if (library && !Has("SELECT count(*) FROM bench") && !Has("sum(attempts)"))
                    {
                        planning += reader.GetDouble(3);
                        execution += reader.GetDouble(4);
                    }

                    if (Has("/* reference claim */"))
                    {
                        claims += calls; // the drain shape's hand-written reference: only the claimed rows come back
                        claimRows += rows;
                    }
                    else if (Has("/* reference outcomes */"))
                    {
                        outcomes += calls;
                    }
                    else if (Has("/* reference reaper */"))
                    {
                        other += calls;
                    }
                    else if (Has("BoundedWork outcomes, with a claim"))
                    {
                        claims += calls; // a plain claim that carries outcomes in its statement: one round trip for both
                        claimRows += rows - calls;
                        carrying += calls;
                    }
                    else if (Has("WITH promoted AS"))
                    {
                        claims += calls;
                        claimRows += rows - calls; // each claim returns one last row that is not an item
                    }
                    else if (query.Equals("COMMIT", StringComparison.OrdinalIgnoreCase))
                    {
                        commits += calls; // the claim that carries outcomes (and the hand-off) run in an explicit transaction
                    }
                    else if (Has("BoundedWork outcomes"))
                    {
                        outcomes += calls;
                    }
                    else if (Has("WITH renewed AS"))
                    {
                        heartbeats += calls;
                    }
                    else if (Has("pg_notify") && !Has("INSERT"))
                    {
                        notifies += calls;
                    }
                    else if (Has("INSERT INTO") && Has(".items") || query.StartsWith("COPY", StringComparison.OrdinalIgnoreCase))
                    {
                        enqueues += calls;
                    }
                    else if (Has(".items") && (Has("SELECT (SELECT count(*)") || Has("DELETE FROM") || Has("lease_until < now()")))
                    {
                        other += calls; // statistics, cleanup, reaping
                    }
                }
            }
        }

        var wal = database.CreateCommand("SELECT wal_bytes::bigint, wal_sync FROM pg_stat_wal");
        await using (wal)
        {
            var reader = await wal.ExecuteReaderAsync(cancellationToken);
            await using (reader)
            {
                await reader.ReadAsync(cancellationToken);
                return new StatementCounts(enqueues, notifies, claims, claimRows, outcomes, heartbeats, other) { Wal = (reader.GetInt64(0), reader.GetInt64(1)), Time = (planning, execution), Commits = commits, CarryingClaims = carrying };
            }
        }
    }

    /// <summary>The counts per item, as the counts table shows them.</summary>
    public string Describe(long items)
    {
        static string F(double value) => value.ToString(value >= 10 ? "0" : value >= 0.1 ? "0.00" : "0.0000", CultureInfo.InvariantCulture);
        var perItem = (double)items;
        return $"{F(Total / perItem)} | {F(RoundTrips / perItem)} | {F(Enqueues / perItem)} | {F(Notifies / perItem)} | {F(Claims / perItem)} | {(Claims > 0 ? F(ClaimedRows / (double)Claims) : "–")} | {F((Outcomes + CarryingClaims) / perItem)} | {(Outcomes + CarryingClaims > 0 ? F(items / (double)(Outcomes + CarryingClaims)) : "–")} | {F(Wal.Bytes / perItem)} | {F(Wal.Syncs / perItem)} | {F(Time.Planning * 1000 / perItem)} | {F(Time.Execution * 1000 / perItem)}";
    }
}
