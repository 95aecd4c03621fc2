"""The course's widgets from the keyboard and a screen reader: names, groups, arrow keys, focus on the result.

ipywidgets gives every button and field a keyboard path of its own (Tab to it, Enter or Space on a
button), and ``tooltip`` becomes a field's ``title``, its accessible name. What it cannot say from Python
(ipywidgets#3954: button grids are not reachable as one control) is added in the page by :func:`wire`,
which appends one hidden HTML widget to a course widget's root box. Its small script, run by the browser
when the widget is drawn (and again when a saved notebook is reopened), works only inside that root:

* every part of the widget keeps its keys: JupyterLab's notebook shortcuts (Enter, arrows, A, B...) are
  suppressed there (``data-lm-suppress-shortcuts``), so Enter and Space press the focused button; all but one:
  Ctrl+S (Cmd+S) still saves the notebook (the suppression is lifted from the keystroke's path while JupyterLab
  or Notebook 7 reads it: a learner who presses Check then Ctrl+S hands in what they checked, issue 44); in a text
  field, whose view keeps its keys to itself, the keystroke is sent again from the notebook around it;
* Enter in a field marked ``agl-enter`` presses its widget's ``agl-submit`` button (Lock in, Check), in one marked
  ``agl-enter-add`` its ``agl-add`` button (a sequence's Add), as a click would (so it waits for the field too);
* a box marked with :data:`PALETTE` (toggle buttons, the names to tick, the names to add in order) is a
  named group (``role="group"``, its ``tooltip`` as ``aria-label``) and the arrow keys, Home and End move
  along its buttons and checkboxes;
* a toggle button says whether it is chosen (``aria-pressed``), not only by its colour;
* a field is named after its ``tooltip`` (``aria-label``, not only its title); a slider's handle after its
  ``tooltip`` (or its description); a box (a palette) and a figure (:func:`figure`) after a hidden first child;
* an HTML widget marked with :data:`RESULT` is a polite live region that can take focus, and when a
  button marked with :data:`TO_RESULT` (Lock in, Check, Mark passed, a refusal's buttons) was pressed, the
  next result written there gets the focus, so a screen reader reads the verdict at once. One marked
  :data:`LIVE` (a stepper's step, a lab's figures) is read when it changes, without taking the focus;
* a press of a button that waits for its fields (:mod:`grader.learner.synced`: Lock in, Check, Add) is held
  back while a field's text is ahead of what the kernel holds, and pressed again once the kernel has it.

Nothing here changes what a widget records; without a browser the appended widget is inert HTML.
"""

from __future__ import annotations

import html

PALETTE = "agl-palette"
RESULT = "agl-said"
LIVE = "agl-live"
TO_RESULT = "agl-to-result"
ROOT = "agl-a11y"
SCRIPT_CLASS = "agl-a11y-script"

_SCRIPT = """(function(img){
var root=img.closest('.agl-a11y');img.parentNode.removeChild(img);
if(!root||root.__aglA11y)return;root.__aglA11y=true;
function name(el){var t=el.getAttribute('title');if(t)return t;var h=el.querySelector(':scope > .agl-name');
if(h)return h.textContent.trim();
var l=el.querySelector(':scope > .widget-label');return l?(l.getAttribute('title')||l.textContent.trim()):'';}
function set(el,a,v){if(v&&el.getAttribute(a)!==v)el.setAttribute(a,v);}
function each(sel,f){Array.prototype.forEach.call(root.querySelectorAll(sel),f);}
function label(){
each('button,input,select,textarea,[role=slider],[tabindex]',function(el){set(el,'data-lm-suppress-shortcuts','true');});
each('input[title],textarea[title],select[title]',function(el){set(el,'aria-label',el.getAttribute('title'));});
each('.agl-palette',function(g){set(g,'role','group');set(g,'aria-label',name(g));});
each('.widget-toggle-button',function(b){set(b,'aria-pressed',b.classList.contains('mod-active')?'true':'false');});
each('.widget-slider',function(s){var t=name(s);Array.prototype.forEach.call(s.querySelectorAll('[role=slider]'),
function(h){set(h,'aria-label',t);});});
each('.widget-image',function(i){set(i,'alt',i.getAttribute('title'));});
each('.agl-figure',function(f){var i=f.querySelector('img');if(i)set(i,'alt',name(f));});
each('.agl-said > .widget-html-content',function(c){set(c,'tabindex','-1');});
each('.agl-said > .widget-html-content,.agl-live > .widget-html-content',function(c){
set(c,'role','status');set(c,'aria-live','polite');});}
if(!window.__aglSaveKey){window.__aglSaveKey=true;window.addEventListener('keydown',function(e){
if((e.key||'').toLowerCase()!=='s'||!(e.ctrlKey||e.metaKey)||e.altKey||!e.target||!e.target.closest||
!e.target.closest('.agl-a11y'))return;var t=e.target;
if(t.tagName==='TEXTAREA'||(t.tagName==='INPUT'&&!/^(checkbox|radio|range|button)$/.test(t.type))){
var host=t.closest('.jp-Notebook,.jp-NotebookPanel')||document.body;e.preventDefault();
var c=new KeyboardEvent('keydown',{key:e.key,code:e.code,ctrlKey:e.ctrlKey,metaKey:e.metaKey,shiftKey:e.shiftKey,
altKey:e.altKey,bubbles:true,cancelable:true});Object.defineProperty(c,'keyCode',{get:function(){return e.keyCode;}});
Object.defineProperty(c,'which',{get:function(){return e.which;}});host.dispatchEvent(c);return;}var off=[];
for(var n=e.target;n&&n.hasAttribute;n=n.parentElement){if(n.hasAttribute('data-lm-suppress-shortcuts')){
off.push(n);n.removeAttribute('data-lm-suppress-shortcuts');}}
setTimeout(function(){off.forEach(function(n){n.setAttribute('data-lm-suppress-shortcuts','true');});},0);},true);}
root.addEventListener('keydown',function(e){
if(e.key!=='Enter'||e.shiftKey||e.ctrlKey||e.altKey||e.metaKey||e.isComposing||!e.target.closest)return;
var t=e.target;if(t.tagName!=='INPUT'||t.type==='checkbox'||t.type==='radio')return;
var f=t.closest('.agl-enter,.agl-enter-add');if(!f)return;
var b=root.querySelector(f.classList.contains('agl-enter-add')?'.agl-add':'.agl-submit');
if(!b||b.disabled||b.offsetParent===null)return;e.preventDefault();e.stopPropagation();b.click();},true);
var keys={ArrowRight:1,ArrowDown:1,ArrowLeft:-1,ArrowUp:-1,Home:0,End:0};
root.addEventListener('keydown',function(e){
if(!(e.key in keys)||!e.target.closest)return;var p=e.target.closest('.agl-palette');if(!p)return;
var items=Array.prototype.filter.call(p.querySelectorAll('button,input[type=checkbox]'),
function(x){return !x.disabled&&x.offsetParent!==null;});
var at=items.indexOf(e.target);if(at<0)return;
var n=e.key==='Home'?0:e.key==='End'?items.length-1:(at+keys[e.key]+items.length)%items.length;
e.preventDefault();e.stopPropagation();items[n].focus();});
function fp(s){var h=0x811c9dc5;for(var i=0;i<s.length;i++){h^=s.charCodeAt(i);h=Math.imul(h,0x01000193)>>>0;}
return 'agl-v-'+h.toString(36);}
function behind(){var late=false;each('.agl-synced',function(f){var i=f.querySelector('input,textarea');
if(i&&!f.classList.contains(fp(i.value)))late=true;});return late;}
var held=null,heldAt=0;
function release(){if(held&&(!behind()||Date.now()-heldAt>15000)){var b=held;held=null;b.click();}}
root.addEventListener('click',function(e){var b=e.target.closest&&e.target.closest('.agl-waits-for-fields');
if(!b||b.disabled||!behind())return;e.stopImmediatePropagation();e.preventDefault();
held=b;heldAt=Date.now();setTimeout(release,15500);},true);
var pressed=0;
root.addEventListener('click',function(e){if(e.target.closest&&e.target.closest('.agl-to-result'))pressed=Date.now();},true);
new MutationObserver(function(ms){label();release();if(!pressed||Date.now()-pressed>120000)return;
for(var k=0;k<ms.length;k++){var n=ms[k].target;if(n.nodeType!==1)n=n.parentNode;
var s=n&&n.closest?n.closest('.agl-said'):null;
if(s&&ms[k].type==='childList'){var c=s.querySelector('.widget-html-content');pressed=0;if(c)c.focus();return;}}})
.observe(root,{subtree:true,childList:true,characterData:true,attributes:true,attributeFilter:['class','title']});
label();})(this)"""


def script_html() -> str:
    """The hidden element that runs the script above once its widget is drawn (an image that fails to load)."""
    return f'<img alt="" src="data:," style="display:none" onerror="{html.escape(_SCRIPT, quote=True)}">'


def wire(box):
    """Make ``box`` (a course widget's root ipywidgets Box) keyboard- and screen-reader-ready; returns it."""
    import ipywidgets as W

    box.add_class(ROOT)
    script = W.HTML(script_html(), layout=W.Layout(width="0", height="0", margin="0", overflow="hidden"))
    script.add_class(SCRIPT_CLASS)
    box.children = (*box.children, script)
    return box


NAME = "agl-name"
FIGURE = "agl-figure"


def named(widget, text: str):
    """Give ``widget`` its accessible name (its ``tooltip``: a field's title, a palette's or slider's label).

    A box has no ``description``, and ipywidgets' page code fails to draw a box given a ``tooltip`` (it reads the
    description's length): a box is named by a hidden first child (:data:`NAME`) that the script reads instead."""
    if widget.has_trait("description"):
        widget.tooltip = text
        return widget
    import ipywidgets as W

    label = W.HTML(html.escape(text), layout=W.Layout(display="none"))
    label.add_class(NAME)
    widget.children = (label, *widget.children)
    return widget


def figure(image, text: str):
    """An image in a box that names it (its ``alt``, set by the script): an image has no description, so it cannot
    be given a tooltip (see :func:`named`)."""
    import ipywidgets as W

    box = named(W.Box([image]), text)
    box.add_class(FIGURE)
    return box


def palette(widget, text: str):
    """Mark ``widget`` (toggle buttons, or a box of buttons or checkboxes) as a named group the arrows move in."""
    widget.add_class(PALETTE)
    return named(widget, text)


def result_area(widget, live_only: bool = False):
    """Mark an HTML widget as where results are written: read aloud, and focused after a marked button."""
    widget.add_class(LIVE if live_only else RESULT)
    return widget


def to_result(*buttons):
    """Mark buttons whose press writes a result: the focus moves to it."""
    for button in buttons:
        button.add_class(TO_RESULT)
    return buttons
