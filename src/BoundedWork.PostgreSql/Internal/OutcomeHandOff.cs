using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The hand-off of a key's slot to its next item, in the transaction of the outcome that frees it (see
/// <see cref="KeyedClaimSql.HandOff"/> and the remarks of <see cref="PostgreSqlWorkQueue{T}"/>'s hand-off part): the
/// <see cref="OutcomeWriter"/> asks before each write whether to claim, adds the claim to the batch's transaction,
/// and hands what it claimed back after the commit, or reports that the write failed.
/// </summary>
internal interface IOutcomeHandOff
{
    /// <summary>
    /// Before a write: whether to claim in its transaction, for the <paramref name="keys"/> of its
    /// <paramref name="finished"/> final keyed outcomes, the write settling <paramref name="settling"/> held items.
    /// Takes the node's room and cluster permits for the claim; <see langword="null"/>: no hand-off (nothing taken).
    /// </summary>
    HandOffPlan? Begin(string[] keys, int finished, int settling);

    /// <summary>The claim statement of <paramref name="plan"/>, to run after the outcome statement in the same transaction.</summary>
    NpgsqlCommand Command(HandOffPlan plan, NpgsqlConnection connection, NpgsqlTransaction transaction);

    /// <summary>Reads one claimed row of <see cref="Command"/>.</summary>
    StoredItem Read(NpgsqlDataReader reader);

    /// <summary>
    /// The transaction committed: starts <paramref name="claimed"/> (gives back what the plan took beyond them).
    /// Returns the items it did not start because the node is stopping: they are held, and the writer releases them.
    /// </summary>
    List<StoredItem> Committed(HandOffPlan plan, List<StoredItem> claimed);

    /// <summary>The write failed (rolled back, or not known to have committed): gives back what the plan took.</summary>
    void Failed(HandOffPlan plan);
}

/// <summary>
/// A hand-off's claim: for the <see cref="Keys"/>, at most <see cref="Count"/> items (the room and permits taken), under
/// the per-key limit <see cref="PerKey"/>; for the <see cref="PrefetchKeys"/> it may also take one item each whose count
/// is M, held as the key's prefetched item (the rule then admits by M + 1; see <see cref="KeyBook"/>).
/// </summary>
internal sealed record HandOffPlan(string[] Keys, int Count, int PerKey, string[]? PrefetchKeys = null)
{
    /// <summary>Gets the bound the rule admits by: M, or M + 1 when the plan may prefetch.</summary>
    public int Bound => PrefetchKeys is { Length: > 0 } ? PerKey + 1 : PerKey;

    /// <summary>Gets a value indicating whether the plan's permits came with claim tokens of a start rate (given back if unused).</summary>
    public bool Rated { get; init; }
}
