namespace BoundedWork.Benchmarks.Compare;

/// <summary>
/// The item every <c>compare</c> contender runs, the same as the Java harness's. <c>counter</c> (the default): one
/// interlocked increment of a counter that every consumer shares, a little real work with the cache-line traffic real
/// shared state brings, which also lets each round check that exactly its items ran. <c>empty</c>: a no-op, which
/// measures the hand-off alone and is faster than anything a real item does. One instance per contender.
/// </summary>
internal sealed class CompareItem
{
    /// <summary>The item kinds the command line accepts; the first is the default.</summary>
    public static readonly IReadOnlyList<string> Kinds = ["counter", "empty"];

    private long _count;

    public CompareItem(string kind)
    {
        Kind = kind;
        Work = kind switch
        {
            "counter" => Increment,
            "empty" => static () => { },
            _ => throw new ArgumentException($"--item: '{kind}' is not one of {string.Join(", ", Kinds)}."),
        };
    }

    public string Kind { get; }

    /// <summary>Gets the item as one cached delegate (nothing allocated per submit).</summary>
    public Action Work { get; }

    /// <summary>Gets how many counter items have run.</summary>
    public long Count => Interlocked.Read(ref _count);

    /// <summary>After a round's fence (every earlier item has run): checks that exactly the round's items ran.</summary>
    public void CheckRound(long countBefore, int items, string contender)
    {
        if (Kind == "counter" && Count != countBefore + items)
        {
            throw new InvalidOperationException($"{contender}: {Count - countBefore} counter items ran in a round of {items}.");
        }
    }

    private void Increment() => Interlocked.Increment(ref _count);
}
