using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The outcome write: one statement (one round trip, one transaction) that writes a batch of outcomes, one part for
/// each kind of outcome the batch has, returning how many outcomes landed. Each part takes the ids and delivery tokens
/// of its deliveries (an outcome lands only on its own delivery: the row's token matches, so no later claim exists, and
/// the row is running under the node's lease; a completion, retry, dead letter or cancellation also lands on a row
/// whose lease expired and which went back to ready without being claimed again). Written again (the writer retries a
/// batch whose answer was lost, committed or not), it changes nothing another delivery holds. A release (the delivery
/// never ran) makes the row ready at once and does not count the delivery. A release or a retry of an item whose
/// cancellation was asked meanwhile cancels it instead. Completed rows are deleted when the queue keeps none.
/// </summary>
/// <remarks>
/// Parameters by name (<see cref="OutcomeParameters"/>), bound in the text's <c>$n</c> order: <c>$1</c> the node's
/// lease owner, then each present kind's arrays in the order of <see cref="OutcomeKind"/> (ids and delivery tokens,
/// then delays in milliseconds and errors for retries, errors for dead letters and cancellations, delays for snoozes). Its row: one count
/// (<see cref="ExecuteRecorded"/>). One statement, not a batch: Npgsql runs synchronous batches with a ThreadPool task,
/// and these writes must go on while the pool is starved. A text is made once per combination of kinds and kept.
/// </remarks>
internal sealed class OutcomeStatement(string items, bool deleteCompleted)
{
    /// <summary>The texts made so far, by combination of kinds.</summary>
    private readonly string?[] _texts = new string?[1 << 6];
    private readonly bool _deleteCompleted = deleteCompleted;

    /// <summary>Gets the text for the kinds in <paramref name="kinds"/> (bit <c>1 &lt;&lt; (int)kind</c>).</summary>
    public string Text(int kinds) => Volatile.Read(ref _texts[kinds]) ?? (_texts[kinds] = Build(kinds));

    /// <summary>Creates the command on <paramref name="connection"/> (in <paramref name="transaction"/>, if any).</summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, NpgsqlTransaction? transaction, in OutcomeParameters parameters)
    {
        var command = new NpgsqlCommand(Text(parameters.Kinds), connection, transaction);
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = parameters.Node });
        AddParameters(command.Parameters, parameters);
        return command;
    }

    /// <summary>Adds the arrays of each present kind, in the order of <see cref="OutcomeKind"/> (not the node).</summary>
    public static void AddParameters(NpgsqlParameterCollection target, in OutcomeParameters parameters)
    {
        foreach (var rows in (OutcomeRows?[])[parameters.Completed, parameters.Released, parameters.Retried, parameters.Dead, parameters.Cancelled, parameters.Snoozed])
        {
            if (rows is not { } present)
            {
                continue;
            }

            target.Add(ClaimParameters.BigintArray(present.Ids));
            target.Add(ClaimParameters.BigintArray(present.Deliveries));
            if (present.DelayMilliseconds is { } delays)
            {
                target.Add(new NpgsqlParameter<double[]> { TypedValue = delays });
            }

            if (present.Errors is { } errors)
            {
                target.Add(new NpgsqlParameter<string?[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Text, TypedValue = errors });
            }
        }
    }

    /// <summary>Runs the command and reads its one row: how many outcomes landed.</summary>
    public static long ExecuteRecorded(NpgsqlCommand command) => (long)command.ExecuteScalar()!;

    /// <summary>
    /// The parts of the write that rides in a plain claim's statement (<see cref="StorageSql.ClaimCarrying"/>), for the
    /// kinds in <paramref name="kinds"/>: its CTEs (named apart from the claim's, each ending without a comma) and the
    /// expression that counts the outcomes that landed. The node is the claim's <c>$3</c>; the arrays are bound from
    /// <c>$</c><paramref name="first"/> on, in the order <see cref="AddParameters"/> adds them (without the node).
    /// </summary>
    public (string Ctes, string Recorded) RidingParts(int kinds, int first)
    {
        var parts = Parts(kinds, first, "$3::text");
        return (string.Join(",\n", parts.Select(part => $"{part.Name}_carried AS ({part.Sql})")),
            string.Join(" + ", parts.Select(part => $"(SELECT count(*) FROM {part.Name}_carried)")));
    }

    private string Build(int kinds)
    {
        var parts = Parts(kinds, 2, "$1::text");
        return $"/* BoundedWork outcomes */ WITH {string.Join(", ", parts.Select(part => $"{part.Name} AS ({part.Sql})"))} "
            + $"SELECT {string.Join(" + ", parts.Select(part => $"(SELECT count(*) FROM {part.Name})"))}";
    }

    /// <summary>The write's parts for <paramref name="kinds"/>: arrays bound from <c>$</c><paramref name="first"/>, the node's lease owner <paramref name="node"/>.</summary>
    private List<(string Name, string Sql)> Parts(int kinds, int first, string node)
    {
        var parts = new List<(string Name, string Sql)>();
        var next = first;
        string P(string type) => $"${next++}::{type}";
        bool Has(OutcomeKind kind) => (kinds & (1 << (int)kind)) != 0;

        // The rows of a part are those whose id is in its id array (the primary key, whatever the statistics: see
        // StorageSql, plan shapes); each row's own values (delivery token, delay, error) are read at the position of its id.
        static string At(string array, string ids) => $"({array})[array_position({ids}, i.id)]";
        // A delivery is the node's own while the row holds its token (no claim since) and is leased to the node; a
        // completion, retry, dead letter or cancellation also lands while the row is ready after the reaper took the
        // lease back (and no one claimed it since). Once written, a part matches its row no more (another state, or
        // another token), except a retry due at once, which, written again, writes the same values: a batch written
        // again after a lost answer changes nothing another delivery holds.
        // The state test is a CASE, which no partial index's predicate is implied by: the primary key is the one path to
        // the rows. Written as (state = 1 AND ...) OR (state = 0 AND ...), it let a generic plan made while the table's
        // statistics were stale (after a bulk insert) take a BitmapOr of items_running and items_ready, the latter probed
        // by id alone (its last column): the whole ready index read per outcome write, 30,000 buffers and 200 ms for 100 rows.
        string Mine(string ids, string deliveries, bool reaped) =>
            $"i.id = ANY({ids}) AND i.delivery = {At(deliveries, ids)} AND CASE i.state WHEN 1 THEN i.lease_owner = {node}"
            + (reaped ? " WHEN 0 THEN i.lease_owner IS NULL END" : " END");
        if (Has(OutcomeKind.Completed))
        {
            var (ids, deliveries) = (P("bigint[]"), P("bigint[]"));
            parts.Add(("done", _deleteCompleted
                ? $"DELETE FROM {items} i WHERE {Mine(ids, deliveries, reaped: true)} RETURNING 1"
                : $"UPDATE {items} i SET state = 2, finished_at = now(), lease_owner = NULL, lease_until = NULL WHERE {Mine(ids, deliveries, reaped: true)} RETURNING 1"));
        }

        if (Has(OutcomeKind.Released))
        {
            var (ids, deliveries) = (P("bigint[]"), P("bigint[]"));
            parts.Add(("released", $"""
                UPDATE {items} i SET state = CASE WHEN i.cancel_requested_at IS NOT NULL THEN 4 ELSE 0 END,
                    attempts = i.attempts - 1, lease_owner = NULL, lease_until = NULL,
                    finished_at = CASE WHEN i.cancel_requested_at IS NOT NULL THEN now() END,
                    last_error = CASE WHEN i.cancel_requested_at IS NOT NULL THEN 'cancelled before it ran' ELSE i.last_error END
                WHERE {Mine(ids, deliveries, reaped: false)}
                RETURNING 1
                """));
        }

        if (Has(OutcomeKind.Retry))
        {
            var (ids, deliveries, delays, errors) = (P("bigint[]"), P("bigint[]"), P("double precision[]"), P("text[]"));
            var delay = At(delays, ids);
            parts.Add(("retried", $"""
                UPDATE {items} i SET
                    state = CASE WHEN i.cancel_requested_at IS NOT NULL THEN 4 WHEN {delay} > 0 THEN 5 ELSE 0 END,
                    run_at = now() + {delay} * interval '1 millisecond', last_error = {At(errors, ids)},
                    finished_at = CASE WHEN i.cancel_requested_at IS NOT NULL THEN now() END,
                    lease_owner = NULL, lease_until = NULL
                WHERE {Mine(ids, deliveries, reaped: true)}
                RETURNING 1
                """));
        }

        foreach (var (kind, name, state) in new[] { (OutcomeKind.Dead, "dead", 3), (OutcomeKind.Cancelled, "cancelled", 4) })
        {
            if (Has(kind))
            {
                var (ids, deliveries, errors) = (P("bigint[]"), P("bigint[]"), P("text[]"));
                parts.Add((name, $"""
                    UPDATE {items} i SET state = {state}, finished_at = now(), last_error = {At(errors, ids)}, lease_owner = NULL, lease_until = NULL
                    WHERE {Mine(ids, deliveries, reaped: true)}
                    RETURNING 1
                    """));
            }
        }

        if (Has(OutcomeKind.Snoozed))
        {
            // A snooze: scheduled after the handler's delay, the delivery not counted (attempts taken back, as a release
            // does), its last error kept; cancelled instead if a cancellation was asked meanwhile. Written again, it
            // matches its row no more (scheduled, not running): it changes nothing another delivery holds.
            var (ids, deliveries, delays) = (P("bigint[]"), P("bigint[]"), P("double precision[]"));
            parts.Add(("snoozed", $"""
                UPDATE {items} i SET
                    state = CASE WHEN i.cancel_requested_at IS NOT NULL THEN 4 ELSE 5 END,
                    run_at = now() + {At(delays, ids)} * interval '1 millisecond', attempts = i.attempts - 1,
                    finished_at = CASE WHEN i.cancel_requested_at IS NOT NULL THEN now() END,
                    last_error = CASE WHEN i.cancel_requested_at IS NOT NULL THEN 'cancelled while snoozing' ELSE i.last_error END,
                    lease_owner = NULL, lease_until = NULL
                WHERE {Mine(ids, deliveries, reaped: false)}
                RETURNING 1
                """));
        }

        if (parts.Count == 0)
        {
            throw new ArgumentOutOfRangeException(nameof(kinds), kinds, "A batch of outcomes has at least one kind.");
        }

        return parts;
    }
}

/// <summary>
/// The outcome write's parameters: the node (the lease owner), and the rows of each kind the batch has (null: none of
/// that kind). The kinds present choose the statement's text.
/// </summary>
internal readonly record struct OutcomeParameters(string Node, OutcomeRows? Completed, OutcomeRows? Released, OutcomeRows? Retried, OutcomeRows? Dead, OutcomeRows? Cancelled, OutcomeRows? Snoozed = null)
{
    /// <summary>Gets the kinds present, bit <c>1 &lt;&lt; (int)kind</c>.</summary>
    public int Kinds =>
        (Completed is null ? 0 : 1 << (int)OutcomeKind.Completed)
        | (Released is null ? 0 : 1 << (int)OutcomeKind.Released)
        | (Retried is null ? 0 : 1 << (int)OutcomeKind.Retry)
        | (Dead is null ? 0 : 1 << (int)OutcomeKind.Dead)
        | (Cancelled is null ? 0 : 1 << (int)OutcomeKind.Cancelled)
        | (Snoozed is null ? 0 : 1 << (int)OutcomeKind.Snoozed);
}

/// <summary>
/// The outcomes of one kind in a batch, one element per delivery in each array: ids and delivery tokens; delays in
/// milliseconds (retries and snoozes only); errors (retries, dead letters and cancellations only).
/// </summary>
internal readonly record struct OutcomeRows(long[] Ids, long[] Deliveries, double[]? DelayMilliseconds, string?[]? Errors);
