namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The problems found in a settings change, keyed by JSON field (or <c>body</c>), one message list per field. The
/// first <see cref="MaxListed"/> fields are kept with their messages; problems with further fields are only counted,
/// so a body of thousands of unknown fields gets an answer of bounded size.
/// </summary>
internal sealed class FieldErrors
{
    /// <summary>The most fields an answer lists.</summary>
    public const int MaxListed = 20;

    private readonly Dictionary<string, string[]> _listed = new(StringComparer.Ordinal);
    private readonly HashSet<string> _unlisted = new(StringComparer.Ordinal);

    /// <summary>Sets the messages of <paramref name="field"/>: listed while there is room (or the field is listed already), else counted.</summary>
    public string[] this[string field]
    {
        set
        {
            if (_listed.Count < MaxListed || _listed.ContainsKey(field))
            {
                _listed[field] = value;
            }
            else
            {
                _unlisted.Add(field);
            }
        }
    }

    /// <summary>Gets how many fields have a problem, listed or not.</summary>
    public int Count => _listed.Count + _unlisted.Count;

    /// <summary>Gets the listed fields and their messages.</summary>
    public IReadOnlyDictionary<string, string[]> Listed => _listed;

    public bool ContainsKey(string field) => _listed.ContainsKey(field) || _unlisted.Contains(field);

    public void Clear()
    {
        _listed.Clear();
        _unlisted.Clear();
    }
}
