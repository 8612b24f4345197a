namespace BoundedWork.AspNetCore.Internal;

/// <summary>One <c>MapBoundedWorkAdmin</c> call: where it is mapped and whether it allows anonymous access.</summary>
internal sealed class AdminMapping(string prefix)
{
    private volatile bool _allowAnonymous;

    public string Prefix { get; } = prefix;

    public bool AllowAnonymous
    {
        get => _allowAnonymous;
        set => _allowAnonymous = value;
    }
}

/// <summary>Every console mapped in the app, for the start-up check.</summary>
internal sealed class AdminMappings
{
    private readonly Lock _sync = new();
    private readonly List<AdminMapping> _mappings = [];

    public IReadOnlyList<AdminMapping> All
    {
        get
        {
            lock (_sync)
            {
                return [.. _mappings];
            }
        }
    }

    public void Add(AdminMapping mapping)
    {
        lock (_sync)
        {
            _mappings.Add(mapping);
        }
    }
}
